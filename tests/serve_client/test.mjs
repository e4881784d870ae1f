// The npm package `openai` (the official client, pinned in
// package-lock.json) against `lockstep serve` (docs/serve.md): models,
// completions, chat, streams and seeds, each answer compared with the
// same request sent as plain JSON, and the client's errors for refusals.
// Usage: node test.mjs BASE_URL (e.g. http://127.0.0.1:8080/v1)
import OpenAI from "openai";

const baseURL = process.argv[2];
const client = new OpenAI({ baseURL, apiKey: "unused", maxRetries: 0 });
const model = "shakespeare-gpt2";
let pass = 0;
let fail = 0;
const check = (what, cond, detail = "") => {
  if (cond) {
    pass++;
  } else {
    fail++;
    console.log(`FAIL: ${what} ${detail}`);
  }
};
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// The same request as plain JSON, without the client.
async function raw(path, body) {
  const r = await fetch(baseURL + path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return r.json();
}

try {
  const models = await client.models.list();
  const ids = models.data.map((m) => m.id);
  check("models.list", same(ids, [model]), JSON.stringify(ids));
  check(
    "models.list payload digest",
    /^[0-9a-f]{64}$/.test(models.data[0].lockstep.payload_sha256),
  );

  // Completions: seeded sampling, the same answer as plain JSON and on a
  // second call; another seed gives other tokens.
  const req = {
    model,
    prompt: "JULIET:",
    max_tokens: 32,
    temperature: 0.8,
    top_p: 0.9,
    seed: 7,
  };
  const c1 = await client.completions.create(req);
  const c2 = await client.completions.create(req);
  const plain = await raw("/completions", req);
  check("completion text", c1.choices[0].text.length > 0);
  check(
    "completion equals plain JSON",
    c1.choices[0].text === plain.choices[0].text &&
      same(c1.lockstep, plain.lockstep),
  );
  check("same seed, same answer", same(c1.lockstep, c2.lockstep));
  const other = await client.completions.create({ ...req, seed: 8 });
  check(
    "another seed, other tokens",
    !same(other.lockstep.tokens, c1.lockstep.tokens),
  );
  check(
    "usage",
    c1.usage.completion_tokens === c1.lockstep.tokens.length &&
      c1.usage.total_tokens ===
        c1.usage.prompt_tokens + c1.usage.completion_tokens,
  );

  // A completion stream: the text and the per-step digests of the whole.
  const stream = await client.completions.create({ ...req, stream: true });
  let text = "";
  const digests = [];
  let finish = null;
  for await (const chunk of stream) {
    text += chunk.choices[0].text;
    if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    else digests.push(chunk.lockstep.logits_sha256);
  }
  check("completion stream text", text === c1.choices[0].text, text);
  check("completion stream digests", same(digests, c1.lockstep.logits_sha256));
  check("completion stream finish", finish === c1.choices[0].finish_reason);

  // Chat: the template's answer, as plain JSON and streamed.
  const chat = {
    model,
    messages: [
      { role: "system", content: "A play." },
      { role: "user", content: "Speak, ROMEO." },
    ],
    max_tokens: 30,
    seed: 5,
  };
  const m1 = await client.chat.completions.create(chat);
  const mplain = await raw("/chat/completions", chat);
  check("chat role", m1.choices[0].message.role === "assistant");
  check(
    "chat equals plain JSON",
    m1.choices[0].message.content === mplain.choices[0].message.content &&
      same(m1.lockstep, mplain.lockstep),
  );
  const mstream = await client.chat.completions.create({
    ...chat,
    stream: true,
  });
  let content = "";
  for await (const chunk of mstream) {
    content += chunk.choices[0]?.delta?.content ?? "";
  }
  check("chat stream", content === m1.choices[0].message.content, content);
  const mseed = await client.chat.completions.create({ ...chat, seed: 6 });
  check(
    "chat: another seed, other tokens",
    !same(mseed.lockstep.tokens, m1.lockstep.tokens),
  );

  // Refusals reach the client as its error classes, with the message.
  try {
    await client.completions.create({ ...req, temperature: 5 });
    check("temperature 5 refused", false, "no error");
  } catch (e) {
    check(
      "temperature 5 refused",
      e instanceof OpenAI.BadRequestError &&
        e.status === 400 &&
        /temperature must be a number in \[0, 2\]/.test(e.message),
      `${e.status} ${e.message}`,
    );
  }
  try {
    await client.completions.create({ ...req, model: "gpt-4" });
    check("unknown model refused", false, "no error");
  } catch (e) {
    check(
      "unknown model refused",
      e instanceof OpenAI.NotFoundError && e.code === "model_not_found",
      `${e.status} ${e.message}`,
    );
  }
} catch (e) {
  fail++;
  console.log(`FAIL: ${e.stack ?? e}`);
}
console.log(`serve_openai_client: ${pass} passed, ${fail} failed`);
process.exit(fail === 0 ? 0 : 1);
