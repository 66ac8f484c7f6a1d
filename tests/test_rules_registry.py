"""The rule registry is the one place a post-hoc rule is declared: pipelines list what they use,
their switches follow from it, Settings groups them, and the docs table is generated from it."""

from __future__ import annotations

import glob
import importlib
from pathlib import Path

import pytest

from agents.cli import main as cli
from agents.core.pipeline import PAPER, STUDIO, ParamSpec, Pipeline
from agents.pipelines import list_pipelines
from agents.rules import registry
from agents.rules.registry import RULES, Rule, rule, rule_of_switch, rules_table

ROOT = Path(__file__).resolve().parent.parent


def test_rules_have_a_known_kind_and_hook_and_unique_names():
    assert len({r.name for r in RULES}) == len(RULES)
    with pytest.raises(ValueError):
        Rule("x", "X", "rewrites somehow", registry.FINAL_ANSWER, "", "agents.rules")
    with pytest.raises(KeyError, match="no rule 'nope'"):
        rule("nope")


@pytest.mark.parametrize("r", RULES, ids=lambda r: r.name)
def test_a_rule_names_code_that_exists_and_a_measurement_that_is_kept(r):
    importlib.import_module(r.module)
    for pattern in filter(None, (p.strip() for p in r.measured.split(","))):
        assert glob.glob(str(ROOT / pattern)), f"{r.name}: nothing at {pattern}"


@pytest.mark.parametrize("pipeline", list_pipelines(), ids=lambda p: p.name)
def test_a_pipeline_lists_every_rule_whose_switch_it_offers(pipeline):
    params = {p.name: p for p in pipeline.params}
    for name in pipeline.rules:
        r = rule(name)
        if r.switch:
            assert r.switch in params, f"{pipeline.name} uses {name} without its switch"
            assert params[r.switch].origin == STUDIO or r.origin != STUDIO
        for child in r.nested:
            if child in params:
                assert params[child].under in (r.switch, *r.nested), child
    for param in params:
        owner = rule_of_switch(param)
        if owner is not None and owner.switch in params:
            assert owner.name in pipeline.rules, f"{pipeline.name}.{param}: list {owner.name}"


def test_param_groups_put_the_paper_first_and_nest_dependent_switches():
    class Tiny(Pipeline):
        name = "tiny"
        params = [ParamSpec("rounds", 3, "rounds of review"),
                  ParamSpec("check", True, "check the result", origin=STUDIO),
                  ParamSpec("check_keys", True, "with check, keys too", origin=STUDIO,
                            under="check"),
                  ParamSpec("paper_sub", 1, "with check, a paper option", under="check")]

    groups = Tiny().param_groups()
    assert list(groups) == [PAPER, STUDIO]
    assert [(s.name, [c.name for c in n]) for s, n in groups[PAPER]] == [("rounds", [])]
    assert [(s.name, [c.name for c in n]) for s, n in groups[STUDIO]] == [
        ("check", ["check_keys", "paper_sub"])]


def test_the_docs_table_is_the_registry_s_and_the_cli_prints_it(capsys):
    table = rules_table(list_pipelines())
    assert table in (ROOT / "docs" / "rules.md").read_text(encoding="utf-8"), \
        "docs/rules.md is out of date: paste the output of `python -m agents rules`"
    assert cli.main(["rules"]) == 0
    assert capsys.readouterr().out.strip() == table
    for r in RULES:
        assert f"| {r.title} |" in table


@pytest.mark.parametrize("pipeline", list_pipelines(), ids=lambda p: p.name)
def test_a_nested_switch_names_a_switch_of_its_own_pipeline(pipeline):
    names = [p.name for p in pipeline.params]
    assert len(names) == len(set(names))
    for spec in pipeline.params:
        assert spec.origin in (PAPER, STUDIO), spec.name
        assert spec.under is None or spec.under in names, f"{spec.name} under {spec.under}"
    drawn = [s.name for entries in pipeline.param_groups().values()
             for parent, nested in entries for s in (parent, *nested)]
    assert sorted(drawn) == sorted(names)  # Settings draws every parameter exactly once


@pytest.mark.parametrize("pipeline", list_pipelines(), ids=lambda p: p.name)
def test_a_rule_turned_on_later_replays_off_where_it_says(pipeline):
    """A rule's ``recorded_off`` names pipelines that use it and whose default is now on, and
    its ``off`` is a value their switch takes: a run recorded without the switch replays with
    it off. A paper option's earlier default stays with its pipeline, a rule's never does."""
    params = {p.name: p for p in pipeline.params}
    replay = pipeline.replay_defaults()
    for r in RULES:
        if pipeline.name not in r.recorded_off:
            continue
        assert r.name in pipeline.rules
        for name in ((r.switch,) if r.switch else ()) + r.nested:
            assert params[name].coerce(r.off) == r.off != params[name].default
            assert replay[name] == r.off
    assert not [k for k in pipeline.earlier_defaults if rule_of_switch(k)]
    assert pipeline.resolve_recorded({}) == pipeline.resolve_params(replay)


@pytest.mark.parametrize("r", [r for r in RULES if r.acts], ids=lambda r: r.name)
def test_a_rule_that_acts_names_a_function_that_exists(r):
    assert callable(registry.action(r))
    with pytest.raises(ValueError, match="module:function"):
        Rule("x", "X", r.kind, r.hook, "", r.module, acts="no_colon")
