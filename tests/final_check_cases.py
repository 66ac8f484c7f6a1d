"""SQL the Final check mends, shared by its tests and the trace tests that show it: on the MAC-SQL
tests' singers and concerts (``macsql_script.SMALL_SQL``), a join nothing reads (``JOINED``,
mended to ``PLAIN``) and a table read only through its join key (``BY_KEY``); on
``dbfactory.TWO_APPLICATIONS_SQL``, a named table of another application (``ACROSS``, asked
``SURFACE``)."""

from __future__ import annotations

JOINED = ("SELECT T1.name FROM singer AS T1 JOIN concert AS T2 ON T1.singer_id = T2.singer_id "
          "WHERE T1.country = 'France'")
PLAIN = "SELECT T1.name FROM singer AS T1 WHERE T1.country = 'France'"

BY_KEY = ("SELECT T1.singer_id FROM singer AS T1 JOIN concert AS T2 "
          "ON T1.singer_id = T2.singer_id WHERE T2.year = 2015")

SURFACE = "What is the total surface area of the continents Asia and Europe?"
ACROSS = ("SELECT SUM(T2.SurfaceArea) FROM continents AS T1 JOIN country AS T2 "
          "ON T1.Continent = T2.Continent WHERE T1.Continent IN ('asia', 'europe')")
