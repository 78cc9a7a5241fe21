"""The Streamlit app (not written yet); it talks to the engine only through `engine`'s public API."""
