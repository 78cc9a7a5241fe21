"""The Streamlit web app (`divergence serve`; `main.py` is the page).

It talks to the engine through `engine`'s public API (plus `engine.paths.home()` for the data directory,
and `engine.api.with_triton_cpu_pass` / `engine.protocol.TRITON_CPU_WORKER_ENV` for the Triton-on-CPU pass) and
to the minimizer through `minimizer.minimize.minimize` and its checkpoint helpers; user code runs only in
the engine's worker processes (and repro.py in a fresh interpreter), never in the Streamlit process.
"""
