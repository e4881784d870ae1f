# Writes <module>.sha256 (sha256sum's format) for the browser's WebGPU
# controller module, lockstep-web.wasm (wasm/lsw_web.c, docs/browser.md).
file(SHA256 ${MODULE} digest)
get_filename_component(name ${MODULE} NAME)
file(WRITE ${MODULE}.sha256 "${digest}  ${name}\n")
