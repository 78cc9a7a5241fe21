"""The Streamlit web app (`divergence serve`).

It talks to the engine through `engine`'s public API (plus `engine.paths.home()` for the data directory);
user code runs only in the engine's worker processes, never in the Streamlit process.
"""
