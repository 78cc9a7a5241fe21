"""Zoo sources for `divergence sweep`: programs written from a list instead of found on disk.

`hf:` builds Hugging Face transformers architectures from their configs (random weights, no download),
`opinfo:` runs every sample of PyTorch's own op_db, `modules:` every module input of its module_db. Each
source is one module here (`hf`, `opinfo`, `modules`), the list of them is `registry.SOURCES`, and what
they share is in `base`. Importing this package imports neither torch nor transformers: a source imports
what it needs when its programs are asked for.
"""
