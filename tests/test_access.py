"""Team mode's ownership rules in the store: who sees and who changes runs, notes, accepted
answers and saved databases, through the same :class:`StoreView` pages and prompts use."""

from __future__ import annotations

import sqlite3

import pytest

from agents.core.events import Run
from agents.store import LOCAL, NotAllowed, Store, StoreView, Viewer

ANA = Viewer("ana", "analyst", team=True)
BO = Viewer("bo", "analyst", team=True)
ROOT = Viewer("root", "admin", team=True)


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "studio.db") as opened:
        yield opened


def run_on(db_name: str, question: str = "How many?") -> Run:
    return Run(pipeline="baseline", question=question, db_name=db_name,
               final_sql="SELECT 1", status="done")


def ids(rows) -> list:
    return [r["run_id"] for r in rows]


def test_a_private_run_is_its_owners_and_an_admins_only(store):
    view = {v.user: StoreView(store, v) for v in (ANA, BO, ROOT)}
    private = view["ana"].save_run(run_on("shop"), shared=False)
    shared = view["ana"].save_run(run_on("shop", "And now?"), shared=True)
    assert set(ids(view["ana"].list_runs())) == {private, shared}
    assert ids(view["bo"].list_runs()) == [shared]
    assert view["bo"].get_run(private) is None and view["bo"].run_info(private) is None
    assert set(ids(view["root"].list_runs())) == {private, shared}
    assert "How many?" not in view["bo"].export_runs(fmt="csv")
    assert view["bo"].list_runs(owner="ana") == [view["bo"].run_info(shared)]
    assert view["bo"].distinct_values("owner") == ["ana"]

    with pytest.raises(NotAllowed, match="ana's: only its owner or an admin"):
        view["bo"].delete_run(shared)
    with pytest.raises(NotAllowed):
        view["bo"].set_run_shared(shared, False)
    with pytest.raises(NotAllowed):  # saving it again (an edit) is the owner's too
        view["bo"].save_run(view["bo"].get_run(shared))
    assert view["bo"].delete_run(private) is False  # not even there for bo
    view["ana"].set_run_shared(private, True)
    assert set(ids(view["bo"].list_runs())) == {private, shared}
    assert view["root"].delete_run(shared) is True
    assert ids(view["ana"].list_runs()) == [private]


def test_annotations_are_by_the_signed_in_user_and_follow_their_run(store):
    ana, bo = StoreView(store, ANA), StoreView(store, BO)
    run_id = ana.save_run(run_on("shop"), shared=True)
    bo.annotate(run_id, "incorrect", author="someone else")
    assert ana.get_annotation(run_id)["author"] == "bo"  # never the free text in team mode
    ana.set_run_shared(run_id, False)
    assert bo.get_annotation(run_id) is None and bo.annotation_history(run_id) == []
    with pytest.raises(ValueError, match="no stored run"):
        bo.annotate(run_id, "correct")


def test_notes_reach_the_prompts_of_whoever_may_see_them_with_their_author(store):
    from agents.runs.knowledge import notes_for

    ana, bo = StoreView(store, ANA), StoreView(store, BO)
    ana.add_note("shop", "price above 100", "premium", shared=False)
    ana.add_note("shop", "status = 1", "active", shared=True)
    bo.add_note("shop", "status = 1", "active", shared=False)  # bo's own copy, not ana's
    given_bo, _ = notes_for(bo, "shop")
    assert [(n.title, n.author) for n in given_bo] == [("active", "ana"), ("active", "bo")]
    given_ana, _ = notes_for(ana, "shop")
    assert [(n.title, n.author) for n in given_ana] == [("premium", "ana"), ("active", "ana")]
    premium = ana.list_notes("shop")[0]
    assert bo.get_note(premium["id"]) is None
    shared_note = [n for n in bo.list_notes("shop") if n["owner"] == "ana"][0]
    with pytest.raises(NotAllowed):
        bo.update_note(shared_note["id"], text="status = 2")
    with pytest.raises(NotAllowed):
        bo.remove_note(shared_note["id"])
    ana.update_note(premium["id"], shared=True)
    assert len(notes_for(bo, "shop")[0]) == 3


def test_accepted_answers_reach_the_example_bank_of_whoever_may_see_them(store):
    from agents.example_bank.accepted import accepted_pairs

    ana, bo = StoreView(store, ANA), StoreView(store, BO)
    run_id = ana.save_run(run_on("shop"), shared=True)
    private = ana.accept(run_id, "How many?", "SELECT 1", "shop", shared=False)
    assert list(accepted_pairs(bo, "shop")) == []
    assert [p[3] for p in accepted_pairs(ana, "shop")] == ["ana"]
    assert bo.run_info(run_id)["accepted"] == "no"  # bo does not see ana's private answer
    mine = bo.accept(run_id, "How many?", "SELECT 1", "shop")
    assert mine != private and ana.get_accepted(mine) is not None
    assert store.run_info(run_id)["accepted_id"] == private  # bo's answer is not linked to
    assert bo.remove_accepted(private) is False             # ana's run
    ana.set_accepted_shared(private, True)
    assert len(list(accepted_pairs(bo, "shop"))) == 2
    with pytest.raises(NotAllowed):
        bo.remove_accepted(private)
    assert StoreView(store, ROOT).remove_accepted(mine) is True


def test_what_was_made_before_team_mode_is_everyones_and_the_admins_to_change(store):
    legacy = store.save_run(run_on("shop"))  # local mode: no owner
    note = store.add_note("shop", "status = 1", "active")
    assert store.run_info(legacy)["owner"] == ""
    bo = StoreView(store, BO)
    assert ids(bo.list_runs()) == [legacy] and bo.get_note(note) is not None
    with pytest.raises(NotAllowed, match="from before sign-in"):
        bo.delete_run(legacy)
    assert StoreView(store, ROOT).remove_note(note) is True
    assert LOCAL.may_change({"owner": "ana", "shared": 0})  # one user: everything is theirs


def test_a_same_named_upload_gets_a_new_name_and_replaces_nothing(store, tmp_path):
    from agents.db.database import Database
    from agents.db.library import LibraryError, open_saved, register_path, remove, save_upload

    def upload(view, rows: int):
        path = tmp_path / f"sales-{rows}.sqlite"
        path.unlink(missing_ok=True)
        conn = sqlite3.connect(path)
        conn.executescript("CREATE TABLE sale (id INTEGER PRIMARY KEY);"
                           + "INSERT INTO sale DEFAULT VALUES;" * rows)
        conn.commit()
        conn.close()
        data = path.read_bytes()
        db = Database.from_bytes("sales.sqlite", data)
        try:
            return save_upload(view, db, "sales.sqlite", data, max_bytes=10**7)
        finally:
            db.close()

    ana, bo = StoreView(store, ANA), StoreView(store, BO)
    first = upload(ana, 1)
    assert first["name"] == "sales" and first["owner"] == "ana" and not first["shared"]
    assert upload(ana, 1)["name"] == "sales"  # the same file again: the same entry
    theirs = upload(bo, 2)
    assert theirs["name"] == "sales_2" and theirs["owner"] == "bo"
    assert [e["name"] for e in bo.saved_databases()] == ["sales_2"]
    assert {e["name"] for e in StoreView(store, ROOT).saved_databases()} == {"sales", "sales_2"}
    assert open_saved(ana.saved_database("sales")).schema.tables[0].row_count == 1
    with pytest.raises(NotAllowed):
        store.put_saved_database("sales", "upload", theirs["path"], viewer=BO)
    assert remove(bo, "sales") is False and ana.saved_database("sales") is not None
    assert upload(ana, 3)["name"] == "sales_3"  # another file of ana's: kept beside, too
    with pytest.raises(LibraryError, match="only an admin"):
        register_path(bo, first["path"])


def test_a_store_from_before_ownership_opens_with_every_item_everyones(tmp_path):
    path = tmp_path / "old.db"
    with Store(path) as store:
        store.save_run(run_on("shop"))
    conn = sqlite3.connect(path)
    for table in ("runs", "accepted", "knowledge", "saved_databases"):
        conn.execute(f"DROP INDEX IF EXISTS idx_{table}_owner")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN owner")
        conn.execute(f"ALTER TABLE {table} DROP COLUMN shared")
    conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    conn.commit()
    conn.close()
    with Store(path) as store:
        [row] = StoreView(store, BO).list_runs()
        assert (row["owner"], row["shared"]) == ("", 1)


def test_a_repeated_upload_keeps_whose_it_is_and_its_sharing(store, tmp_path):
    from agents.db.database import Database
    from agents.db.library import save_upload

    path = tmp_path / "pets.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE pet (id INTEGER PRIMARY KEY);")
    conn.close()
    data = path.read_bytes()

    def upload(view):
        db = Database.from_bytes("pets.sqlite", data)
        try:
            return save_upload(view, db, "pets.sqlite", data, max_bytes=10**7, shared=False)
        finally:
            db.close()

    ana = StoreView(store, ANA)
    upload(ana)
    store.set_database_shared("pets", True, viewer=ANA)
    again = upload(StoreView(store, ROOT))  # an admin uploads the same file once more
    assert (again["name"], again["owner"], again["shared"]) == ("pets", "ana", 1)
    assert ana.saved_database("pets") is not None


def test_whose_filters_what_was_made_before_sign_in_too(store):
    legacy = store.save_run(run_on("shop"))
    StoreView(store, ANA).save_run(run_on("shop", "Mine?"))
    assert ids(StoreView(store, BO).list_runs(owner="")) == [legacy]


def test_usernames_and_passwords_the_sign_in_form_could_never_match_are_refused(tmp_path):
    from agents.core import team

    users = tmp_path / "users.yaml"
    with pytest.raises(team.TeamError, match="lower-case"):
        team.add_user("Alice", "long-enough-1", role="analyst", path=users)
    with pytest.raises(team.TeamError, match="start or end with a space"):
        team.add_user("alice", " long-enough-1", role="analyst", path=users)
    with pytest.raises(team.TeamError, match="at least 8"):
        team.add_user("alice", "short", role="analyst", path=users)
    team.add_user("alice", "long-enough-1", role="admin", path=users)
    assert [(a.username, a.role) for a in team.accounts(users)] == [("alice", "admin")]
    text = users.read_text()
    assert "long-enough-1" not in text and "$2b$" in text
    users.write_text(text.replace(text[text.index("$2b$"):text.index("$2b$") + 60], "plain"))
    with pytest.raises(team.TeamError, match="no bcrypt password hash"):
        team.load_config(users)
    assert team.remove_user("alice", users) is True


def test_nobody_joins_a_conversation_they_may_not_see(store):
    ana, bo = StoreView(store, ANA), StoreView(store, BO)
    first = run_on("shop")
    ana.save_run(first, shared=False)
    ana.add_to_thread(first)

    def follow_up(of: Run, question: str) -> Run:
        run = run_on("shop", question)
        run.context = {"thread_id": of.run_id, "follow_up": {"run_id": of.run_id}}
        return run

    mine = follow_up(first, "Only the cheap ones?")
    ana.save_run(mine, shared=False)
    assert ana.add_to_thread(mine) == first.run_id
    forged = follow_up(first, "What did ana ask?")  # bo names ana's private run
    bo.save_run(forged, shared=False)
    assert bo.add_to_thread(forged) is None
    joined = run_on("shop", "And the thread?")  # or only her thread
    joined.context = {"thread_id": first.run_id}
    bo.save_run(joined, shared=False)
    assert bo.add_to_thread(joined) is None
    assert [r["question"] for r in ana.thread_runs(first.run_id)] == [
        "How many?", "Only the cheap ones?"]
    hijack = run_on("shop", "Mine, but in her thread")  # bo's own run, her thread's id
    bo.save_run(hijack, shared=True)
    hijack.context = {"thread_id": first.run_id, "follow_up": {"run_id": hijack.run_id}}
    assert bo.add_to_thread(hijack) is None
    early = run_on("shop", "Claimed before she follows up")  # a thread not recorded yet
    early.context = {"thread_id": "not-yet-a-thread"}
    bo.save_run(early, shared=True)
    assert bo.add_to_thread(early) is None
    later = follow_up(mine, "And the dear ones?")  # her conversation goes on untouched
    later.context["thread_id"] = first.run_id
    ana.save_run(later, shared=False)
    assert ana.add_to_thread(later) == first.run_id
    store.set_run_shared(first.run_id, True)  # once shared, anyone may follow it up
    assert bo.add_to_thread(forged) == first.run_id
