"""The Streamlit pages of the studio and the UI helpers they share (``ui_*`` modules).

Page scripts (``ask.py``, ``schema.py``, ...) are registered explicitly with ``st.navigation`` in
``app.py``; the ``ui_*`` modules are ordinary imports. Nothing here is imported by the engine.
"""
