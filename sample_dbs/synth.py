"""Synthetic values shared by the sample databases: people, e-mail addresses, dates, money.

Names mix many origins so that questions about people meet accents, apostrophes and repeated
names; addresses use reserved example domains only, so no real mailbox is ever named.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Sequence

FIRST_NAMES = [
    "Olivia", "Liam", "Emma", "Noah", "Ava", "Oliver", "Sophia", "Elijah", "Isabella", "James",
    "Mia", "William", "Charlotte", "Benjamin", "Amelia", "Lucas", "Harper", "Henry", "Evelyn",
    "Alexander", "Abigail", "Mateo", "Emily", "Daniel", "Ella", "Michael", "Elizabeth", "Sebastian",
    "Sofia", "Jack", "Avery", "Samuel", "Scarlett", "David", "Grace", "Joseph", "Chloe", "Carter",
    "Victoria", "Owen", "Riley", "Wyatt", "Aria", "John", "Lily", "Luke", "Hannah", "Gabriel",
    "Zoe", "Anthony", "Nora", "Isaac", "Leah", "Dylan", "Hazel", "Leo", "Aurora", "Julian",
    "Priya", "Arjun", "Mei", "Hiroshi", "Yuki", "Chen", "Fatima", "Omar", "Amara", "Kwame",
    "Lucia", "Diego", "Ingrid", "Lars", "Sven", "Freya", "Matteo", "Giulia", "Pierre", "Camille",
    "Anna", "Jonas", "Elena", "Mikhail", "Aisha", "Tariq", "Nadia", "Rafael", "Ana", "Tomás",
]
LAST_NAMES = [
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor",
    "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez",
    "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
    "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall",
    "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Patel", "Shah", "Kim", "Park",
    "Tanaka", "Sato", "Wang", "Li", "Zhang", "Müller", "Schmidt", "Schneider", "Fischer",
    "Dubois", "Moreau", "Rossi", "Russo", "Bianchi", "Andersson", "Johansson", "Nielsen",
    "Jensen", "O'Brien", "Murphy", "Kelly", "Novak", "Kowalski", "Ivanov", "Okafor", "Mensah",
    "Silva", "Santos", "Costa", "Haddad", "Khan", "Ali", "Cohen", "Fernandez",
]


def day_range(start: date, end: date) -> list[date]:
    """Every day from ``start`` to ``end``, both included."""
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


def pick_date(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randint(0, (end - start).days))


def person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)


def email_address(first: str, last: str, taken: set[str], domains: Sequence[str],
           rng: random.Random) -> str:
    """A plausible unique address on reserved example domains (never a real mailbox)."""
    base = f"{first}.{last}".lower().replace("'", "").replace(" ", "")
    base = base.translate(str.maketrans("üáéíóúñ", "uaeioun"))
    domain = rng.choice(domains)
    address = f"{base}@{domain}"
    n = 1
    while address in taken:
        n += 1
        address = f"{base}{n}@{domain}"
    taken.add(address)
    return address


def money(x: float) -> float:
    return round(x + 1e-9, 2)
