"""library.sqlite: a public library, its books with many authors, members and loans.

A few prolific authors, recent books borrowed most, one copy per title (a book on loan cannot
be lent again), open loans with no return date and late returns with fines: many-to-many
joins and dates the agents must reason about.
"""

from __future__ import annotations

import random
import re
import sqlite3
from datetime import date, timedelta

from .synth import day_range, email_address, money, person
from .writing import insert, insert_tables

NAME = "library"

DDL = """
CREATE TABLE branches (
    branch_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    address TEXT NOT NULL,
    opened_year INTEGER NOT NULL
);
CREATE TABLE publishers (
    publisher_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    country TEXT NOT NULL
);
CREATE TABLE authors (
    author_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    birth_year INTEGER,
    nationality TEXT
);
CREATE TABLE books (
    book_id INTEGER PRIMARY KEY,
    isbn TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    genre TEXT NOT NULL,
    publisher_id INTEGER NOT NULL REFERENCES publishers(publisher_id),
    published_year INTEGER NOT NULL,
    pages INTEGER NOT NULL,
    language TEXT NOT NULL
);
CREATE TABLE book_authors (
    book_id INTEGER NOT NULL REFERENCES books(book_id),
    author_id INTEGER NOT NULL REFERENCES authors(author_id),
    role TEXT NOT NULL,
    PRIMARY KEY (book_id, author_id)
);
CREATE TABLE members (
    member_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT UNIQUE,
    membership_type TEXT NOT NULL,
    joined_date TEXT NOT NULL,
    home_branch_id INTEGER NOT NULL REFERENCES branches(branch_id)
);
CREATE TABLE loans (
    loan_id INTEGER PRIMARY KEY,
    book_id INTEGER NOT NULL REFERENCES books(book_id),
    member_id INTEGER NOT NULL REFERENCES members(member_id),
    branch_id INTEGER NOT NULL REFERENCES branches(branch_id),
    loan_date TEXT NOT NULL,
    due_date TEXT NOT NULL,
    return_date TEXT,
    fine REAL NOT NULL DEFAULT 0
);
CREATE INDEX idx_loans_book ON loans(book_id);
CREATE INDEX idx_loans_member ON loans(member_id);
CREATE INDEX idx_book_authors_author ON book_authors(author_id);
"""

BRANCHES = [("Central Library", "1 Market Square", 1962),
            ("Riverside Branch", "48 River Road", 1988),
            ("Northgate Branch", "210 North Avenue", 2004),
            ("Eastwood Branch", "7 Elm Street", 2015)]

PUBLISHERS = [("Harbor House", "United States"), ("Penrose Books", "United Kingdom"),
              ("Northlight Press", "Canada"), ("Bluefield Publishing", "United States"),
              ("Lantern & Quill", "United Kingdom"), ("Meridian Editions", "Australia"),
              ("Cobalt Street Press", "United States"), ("Ashgrove Publishers", "Ireland"),
              ("Silverpine Books", "United States"), ("Kestrel Academic", "United Kingdom"),
              ("Little Acorn Press", "United States"), ("Tidewater Media", "Canada")]

NATIONALITIES = [("American", 30), ("British", 20), ("Canadian", 8), ("Irish", 5),
                 ("Australian", 5),
                 ("French", 6), ("German", 5), ("Japanese", 5), ("Nigerian", 4), ("Indian", 5),
                 ("Spanish", 4), ("Swedish", 3)]

GENRES = {  # genre: (weight in catalogue, popularity multiplier, title patterns)
    "Fiction": (20, 1.2, ["The {adj} {noun}", "{noun} of {place}", "A {noun} for {name}",
                          "The Last {noun}", "{name}'s {noun}"]),
    "Mystery": (14, 1.5, ["Murder at {place}", "The {adj} Witness", "Death in {place}",
                          "The {noun} Affair", "A Quiet {noun}"]),
    "Science Fiction": (9, 1.3, ["The {adj} Star", "Beyond {place}", "Signals from {place}",
                                 "The {noun} Protocol", "Orbit of {noun}s"]),
    "Fantasy": (9, 1.4, ["The {noun} of {place}", "Crown of {noun}s", "The {adj} Dragon",
                         "Song of the {adj} {noun}"]),
    "Romance": (8, 1.3, ["A {adj} Summer in {place}", "Letters to {name}",
                         "The {noun} Between Us"]),
    "Biography": (7, 0.9, ["{name}: A Life", "The Life and Times of {name}", "Becoming {name}"]),
    "History": (8, 0.8, ["A Short History of {topic}", "The Age of {topic}", "{place} at War",
                         "Empires of {topic}"]),
    "Science": (8, 0.9, ["The Science of {topic}", "Understanding {topic}",
                         "The Hidden World of {topic}"]),
    "Children": (10, 1.6, ["The {adj} Little {animal}", "{name} and the {animal}",
                           "Where the {animal}s Sleep", "Goodnight, {animal}"]),
    "Self-Help": (5, 1.0, ["The Art of {topic}", "Better {topic}", "Ten Lessons in {topic}"]),
    "Travel": (4, 0.7, ["Walking {place}", "A Traveler's Guide to {place}", "Roads of {place}"]),
    "Poetry": (3, 0.5, ["Poems of the {adj} {noun}", "{noun} and Other Poems"]),
}
WORDS = {
    "adj": ["Silent", "Hidden", "Broken", "Golden", "Distant", "Forgotten", "Crimson", "Winter",
            "Burning", "Quiet", "Secret", "Wild", "Glass", "Paper", "Northern", "Endless", "Lost",
            "Midnight", "Silver", "Restless"],
    "noun": ["Garden", "River", "House", "Promise", "Shadow", "Harbor", "Lantern", "Orchard",
             "Tide", "Mirror", "Island", "Letter", "Bridge", "Storm", "Compass", "Forest", "Echo",
             "Kingdom", "Voyage", "Key"],
    "place": ["Avalon", "Kyoto", "Marrakesh", "the North", "Lisbon", "Cape Town", "Prague",
              "the Valley", "Patagonia", "Venice", "Iceland", "Harrow Hill", "the Coast", "Oxford"],
    "name": ["Eleanor", "Samuel", "Ada", "Theo", "Marguerite", "Kofi", "Isabel", "Hugo", "Nell",
             "Rosa", "Felix", "Iris"],
    "topic": ["Time", "Salt", "Sleep", "Memory", "Habits", "Money", "Maps", "Light", "Numbers",
              "Trees", "Cities", "Rivers", "Focus", "Stars", "Bread", "Change"],
    "animal": ["Fox", "Bear", "Owl", "Rabbit", "Whale", "Hedgehog", "Tiger", "Penguin", "Badger",
               "Otter"],
}
LIB_START, LIB_END = date(2022, 1, 1), date(2024, 12, 31)


def _isbn13(rng: random.Random, taken: set[str]) -> str:
    """A syntactically valid ISBN-13 (correct check digit) in the 978 prefix."""
    while True:
        body = "978" + "".join(str(rng.randint(0, 9)) for _ in range(9))
        check = (10 - sum(int(d) * (1 if i % 2 == 0 else 3) for i, d in enumerate(body)) % 10) % 10
        isbn = body + str(check)
        if isbn not in taken:
            taken.add(isbn)
            return isbn


def fill(conn: sqlite3.Connection, rng: random.Random) -> None:
    insert(conn, "branches", [(i, *b) for i, b in enumerate(BRANCHES, 1)])
    insert(conn, "publishers", [(i, *p) for i, p in enumerate(PUBLISHERS, 1)])

    authors, names = [], set()
    nat_names = [n for n, _ in NATIONALITIES]
    nat_w = [w for _, w in NATIONALITIES]
    while len(authors) < 220:
        first, last = person(rng)
        name = f"{first} {last}"
        if name in names:
            continue
        names.add(name)
        birth = None if rng.random() < 0.08 else rng.randint(1925, 1995)
        nationality = None if rng.random() < 0.05 else rng.choices(nat_names, nat_w)[0]
        authors.append((len(authors) + 1, name, birth, nationality))
    insert(conn, "authors", authors)
    author_ids = [a[0] for a in authors]
    author_w = [rng.paretovariate(1.6) for _ in author_ids]  # a few prolific authors

    genres = list(GENRES)
    books, book_authors, popularity = [], [], {}
    titles: set[str] = set()
    isbns: set[str] = set()
    while len(books) < 700:
        genre = rng.choices(genres, [GENRES[g][0] for g in genres])[0]
        pattern = rng.choice(GENRES[genre][2])
        title = pattern.format(**{k: rng.choice(v) for k, v in WORDS.items()})
        title = re.sub(r"\bA ([AEIOU])", r"An \1", title)
        if title in titles:
            continue
        titles.add(title)
        bid = len(books) + 1
        year = 2024 - int(abs(rng.gauss(0, 14)))  # most of the collection is recent
        if genre == "Children":
            pages = rng.randint(12, 32) * 2
        elif genre == "Poetry":
            pages = rng.randint(30, 80) * 2
        else:
            pages = max(96, int(rng.gauss(330, 90)) // 2 * 2)
        language = rng.choices(["English", "Spanish", "French", "German"], [88, 6, 4, 2])[0]
        books.append((bid, _isbn13(rng, isbns), title, genre, rng.randint(1, len(PUBLISHERS)),
                      year, pages, language))
        n_auth = rng.choices([1, 2, 3], [84, 13, 3])[0]
        for k, aid in enumerate(dict.fromkeys(rng.choices(author_ids, author_w, k=n_auth))):
            role = "author" if k == 0 else ("illustrator" if genre == "Children" else "co-author")
            book_authors.append((bid, aid, role))
        recency = 1.0 + max(0, year - 2015) * 0.12
        popularity[bid] = GENRES[genre][1] * recency * rng.lognormvariate(0, 0.9)
    insert_tables(conn, books=books, book_authors=book_authors)

    members, emails = [], set()
    for mid in range(1, 1101):
        first, last = person(rng)
        mtype = rng.choices(["standard", "student", "senior", "family"], [55, 20, 15, 10])[0]
        span = (date(2024, 12, 1) - date(2012, 1, 1)).days
        joined = date(2012, 1, 1) + timedelta(days=int(span * rng.random() ** 0.7))
        email = (None if rng.random() < 0.12
                 else email_address(first, last, emails, ["mail.example.com"], rng))
        home = rng.choices([1, 2, 3, 4], [40, 25, 20, 15])[0]
        members.append((mid, first, last, email, mtype, joined.isoformat(), home))
    insert(conn, "members", members)

    book_ids = list(popularity)
    book_w = [popularity[b] for b in book_ids]
    reader_w = [rng.lognormvariate(0, 1.1) for _ in members]
    loan_days = day_range(LIB_START, LIB_END)
    # Busier in the summer holidays and December; closed on Sundays.
    day_w = [(1.3 if d.month in (7, 8, 12) else 1.0) * (0.0 if d.weekday() == 6 else 1.0)
             for d in loan_days]
    loans = []
    open_copies: dict[int, date] = {}  # book -> date its current loan ends (one copy per title)
    for day in sorted(rng.choices(loan_days, day_w, k=9000)):
        member = rng.choices(members, reader_w)[0]
        if date.fromisoformat(member[5]) > day:
            continue
        book = rng.choices(book_ids, book_w)[0]
        if open_copies.get(book, date.min) >= day or books[book - 1][5] > day.year:
            continue
        due = day + timedelta(days=21)
        late = rng.random() < 0.14
        back = (due + timedelta(days=rng.randint(1, 30)) if late
                else day + timedelta(days=rng.randint(2, 21)))
        if back > LIB_END and rng.random() < 0.9 or rng.random() < 0.006:  # still out, or lost
            returned, fine = None, 0.0
            open_copies[book] = date.max
        else:
            back = min(back, LIB_END)
            returned = back.isoformat()
            fine = money(max(0, (back - due).days) * 0.25)
            open_copies[book] = back
        branch = member[6] if rng.random() < 0.8 else rng.randint(1, 4)
        loans.append((len(loans) + 1, book, member[0], branch, day.isoformat(), due.isoformat(),
                      returned, fine))
    insert(conn, "loans", loans)
