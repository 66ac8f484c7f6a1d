"""Widgets the pages are built from: each module is one piece of screen with its own state keys."""
