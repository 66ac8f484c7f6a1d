"""The Streamlit side of the studio: everything the page scripts in ``pages/`` share.

- ``state``, ``services``, ``databases``: session state, the cached model client and store, the
  databases a session can open;
- ``trace``: how each kind of agent output is drawn (one module per pipeline);
- ``widgets``: the pieces a page is built from (database picker, parameters, result pane,
  step editor, charts, schema diagram);
- ``format``: pure helpers that draw nothing;
- ``bootstrap``: makes every page run through ``app.py``.

The engine in ``agents/`` never imports anything from here.
"""
