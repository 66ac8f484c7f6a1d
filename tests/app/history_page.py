"""The History page as the app tests drive it: open it (on a run, when given) and submit the
annotation form."""

from __future__ import annotations


def open_history(at, run_id: str | None = None):
    at.switch_page("pages/history.py").run()
    assert not at.exception, at.exception
    if run_id:
        at.selectbox(key="hist_open").select(run_id).run()
        assert not at.exception, at.exception
    return at


def submit(at, **fields):
    form = at.get("form")[0]  # the annotation form is the only form on the page
    if "verdict" in fields:
        form.radio[0].set_value(fields["verdict"])
    if "error_type" in fields:
        form.selectbox[0].set_value(fields["error_type"])
    if "step" in fields:
        form.selectbox[1].set_value(fields["step"])
    if "corrected" in fields:
        form.text_area[0].input(fields["corrected"])
    if "notes" in fields:
        form.text_area[1].input(fields["notes"])
    [b for b in at.button if b.label == "Save annotation"][0].click().run()
    assert not at.exception, at.exception
    return at
