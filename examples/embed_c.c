/* Embedding lockstep from C through its C ABI (lockstep.h, docs/library.md):
 * load a GPT-2, tokenize, prefill the prompt and generate. Prints the new
 * token ids (comma-separated) on the first line and their text on the next.
 *
 *   embed_c MODEL DATADIR TEXT [N [TOP_P SEED]]
 *
 * DATADIR holds gpt2/encoder.json and gpt2/vocab.bpe ("-": the library's
 * default, $LOCKSTEP_DATA/gpt2). N new tokens (8); greedy unless TOP_P < 1,
 * then nucleus sampling seeded with SEED. Exit status 2 for usage, 1 for an
 * error, with the library's message. */
#include <lockstep.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char* what, lockstep_status s) {
  fprintf(stderr, "embed_c: %s: %s: %s\n", what, lockstep_status_string(s),
          lockstep_last_error());
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 4 || argc > 7 || argc == 6) {
    fprintf(stderr, "usage: embed_c MODEL DATADIR TEXT [N [TOP_P SEED]]\n");
    return 2;
  }
  const size_t n_new = argc > 4 ? (size_t)strtoul(argv[4], NULL, 10) : 8;
  if (n_new < 1 || n_new > 1024) {
    fprintf(stderr, "embed_c: N must be in 1 .. 1024\n");
    return 2;
  }
  char tokdir[4096];
  const char* dir = NULL;
  if (strcmp(argv[2], "-") != 0) {
    if (snprintf(tokdir, sizeof tokdir, "%s/gpt2", argv[2]) >=
        (int)sizeof tokdir) {
      fprintf(stderr, "embed_c: DATADIR too long\n");
      return 2;
    }
    dir = tokdir;
  }

  int rc = 1;
  lockstep_model* model = NULL;
  lockstep_tokenizer* tok = NULL;
  lockstep_session* session = NULL;
  lockstep_sampler* sampler = NULL;
  int32_t* prompt = NULL;
  int32_t out[1024];
  char* text = NULL;
  lockstep_status s;

  if ((s = lockstep_model_load(argv[1], &model)) != LOCKSTEP_OK) {
    rc = fail("load", s);
    goto done;
  }
  if ((s = lockstep_tokenizer_load(dir, &tok)) != LOCKSTEP_OK) {
    rc = fail("tokenizer", s);
    goto done;
  }
  /* Two calls: the first asks for the size. */
  size_t n_prompt = 0;
  const size_t len = strlen(argv[3]);
  s = lockstep_tokenize(tok, argv[3], len, NULL, 0, &n_prompt);
  if (s != LOCKSTEP_OK && s != LOCKSTEP_ERR_BUFFER) {
    rc = fail("tokenize", s);
    goto done;
  }
  if (n_prompt == 0) {
    fprintf(stderr, "embed_c: empty prompt\n");
    rc = 2;
    goto done;
  }
  prompt = malloc(n_prompt * sizeof *prompt);
  if (!prompt) goto done;
  if ((s = lockstep_tokenize(tok, argv[3], len, prompt, n_prompt, &n_prompt)) !=
      LOCKSTEP_OK) {
    rc = fail("tokenize", s);
    goto done;
  }

  lockstep_session_options so;
  lockstep_session_options_init(&so);
  so.threads = 2;
  if ((s = lockstep_session_create(model, &so, &session)) != LOCKSTEP_OK) {
    rc = fail("session", s);
    goto done;
  }
  lockstep_model_info info;
  lockstep_model_get_info(model, &info);
  lockstep_sampler_options po;
  lockstep_sampler_options_init(&po);
  if (argc == 7) {
    po.top_p = strtod(argv[5], NULL);
    po.seed = strtoull(argv[6], NULL, 10);
  }
  if ((s = lockstep_sampler_create(&po, info.n_vocab, &sampler)) !=
      LOCKSTEP_OK) {
    rc = fail("sampler", s);
    goto done;
  }
  size_t n_out = 0;
  s = lockstep_generate(session, sampler, prompt, n_prompt, n_new,
                        /*stop_token=*/-1, out, &n_out);
  if (s != LOCKSTEP_OK) {
    rc = fail("generate", s);
    goto done;
  }
  for (size_t i = 0; i < n_out; ++i) {
    printf("%d%c", (int)out[i], i + 1 < n_out ? ',' : '\n');
  }
  size_t n_text = 0;
  s = lockstep_detokenize(tok, out, n_out, NULL, 0, &n_text);
  text = malloc(n_text + 1);
  if (!text) goto done;
  if ((s = lockstep_detokenize(tok, out, n_out, text, n_text + 1, &n_text)) !=
      LOCKSTEP_OK) {
    rc = fail("detokenize", s);
    goto done;
  }
  fwrite(text, 1, n_text, stdout);
  printf("\n");
  rc = fflush(stdout) == 0 ? 0 : 1;

done:
  free(text);
  free(prompt);
  lockstep_sampler_free(sampler);
  lockstep_session_free(session);
  lockstep_tokenizer_free(tok);
  lockstep_model_free(model);
  return rc;
}
