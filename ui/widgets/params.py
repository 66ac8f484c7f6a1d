"""Widgets for pipeline parameters, drawn from each pipeline's ``ParamSpec`` list."""

from __future__ import annotations

from typing import Any

import streamlit as st

from agents.core.engine import PAPER, STUDIO, ParamSpec, Pipeline


def kind_of(spec: ParamSpec) -> str:
    if spec.kind:
        return spec.kind
    if spec.choices is not None:
        return "choice"
    return type(spec.default).__name__


def param_widget(spec: ParamSpec, value: Any, key: str) -> Any:
    """One widget for ``spec`` showing ``value``; returns the widget's current value."""
    label = spec.name.replace("_", " ")
    kind = kind_of(spec)
    if key not in st.session_state:
        st.session_state[key] = value
    if kind == "bool":
        return st.checkbox(label, key=key, help=spec.help or None)
    if kind == "choice" or spec.choices is not None:
        return st.selectbox(label, list(spec.choices or []), key=key, help=spec.help or None)
    if kind == "int":
        return st.number_input(label, key=key, step=1, help=spec.help or None,
                               min_value=int(spec.min) if spec.min is not None else None,
                               max_value=int(spec.max) if spec.max is not None else None)
    if kind == "float":
        return st.number_input(label, key=key, help=spec.help or None,
                               min_value=float(spec.min) if spec.min is not None else None,
                               max_value=float(spec.max) if spec.max is not None else None)
    return st.text_input(label, key=key, help=spec.help or None)


GROUP_TITLES = {PAPER: "From the paper", STUDIO: "Studio additions"}


def param_widgets(pipeline: Pipeline, values: dict, key_prefix: str) -> dict:
    """Widgets for every parameter of ``pipeline``, the paper's options first and the studio's
    additions after, a switch that only matters under another drawn indented beneath it;
    returns {name: value}."""
    chosen: dict = {}

    def draw(spec: ParamSpec) -> None:
        chosen[spec.name] = param_widget(spec, values.get(spec.name, spec.default),
                                         f"{key_prefix}_{pipeline.name}_{spec.name}")

    for origin, entries in pipeline.param_groups().items():
        if not entries:
            continue
        st.markdown(f"**{GROUP_TITLES[origin]}**")
        for spec, nested in entries:
            draw(spec)
            if nested:
                _, inner = st.columns([1, 14])
                with inner:
                    for child in nested:
                        draw(child)
    return chosen
