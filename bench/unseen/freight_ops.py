"""A regional parcel carrier's operations database, generated, for questions on a schema nobody
tuned for.

Eleven tables kept the way a carrier's systems keep them: distances in metres, weights in grams,
fuel in millilitres, money in cents, shipment and trip times as Unix epoch seconds (the depot
calendar as ISO dates), pool vehicles with no home depot, staff of four roles in one table
(depot managers, drivers, dispatchers, mechanics) supervising one another, account
representatives who are staff, a shipment's stored charge with a fuel surcharge in it (a weight
rate alone does not give it), and drivers who now and then take a vehicle of another depot.
Every value is drawn from one seeded generator, so the file is the same on every machine. Its
questions, written with their gold SQL and checked by ``bench/unseen_sets.py``, are in
``freight_ops_questions.json``.

Known and left as measured: a shipment's delivery time is drawn from its creation, not from
its trip (many are delivered before their trip departs), and a few trips and maintenance jobs
fall after their vehicle's retirement. No question reads across those; a change to the data
would change the gold answers the committed evaluations scored against.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

SEED = 20261208
SCHEMA = """
CREATE TABLE regions (region_code TEXT PRIMARY KEY, region_name TEXT NOT NULL);
CREATE TABLE depots (depot_id INTEGER PRIMARY KEY, depot_name TEXT NOT NULL,
    region_code TEXT NOT NULL REFERENCES regions (region_code), opened_on TEXT);
CREATE TABLE staff (staff_id INTEGER PRIMARY KEY, full_name TEXT NOT NULL,
    role TEXT NOT NULL, depot_id INTEGER REFERENCES depots (depot_id), hired_on TEXT NOT NULL,
    supervisor_id INTEGER REFERENCES staff (staff_id));
CREATE TABLE vehicles (vehicle_id INTEGER PRIMARY KEY, plate TEXT NOT NULL, model TEXT NOT NULL,
    depot_id INTEGER REFERENCES depots (depot_id), payload_kg INTEGER NOT NULL,
    commissioned_on TEXT NOT NULL, retired_on TEXT);
CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name TEXT NOT NULL,
    segment TEXT NOT NULL, region_code TEXT NOT NULL REFERENCES regions (region_code),
    account_rep_id INTEGER REFERENCES staff (staff_id));
CREATE TABLE shipments (shipment_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers (customer_id),
    origin_depot_id INTEGER NOT NULL REFERENCES depots (depot_id),
    dest_region_code TEXT NOT NULL REFERENCES regions (region_code),
    created_ts INTEGER NOT NULL, delivered_ts INTEGER, status TEXT NOT NULL,
    charge_cents INTEGER NOT NULL);
CREATE TABLE parcels (parcel_id INTEGER PRIMARY KEY,
    shipment_id INTEGER NOT NULL REFERENCES shipments (shipment_id), weight_g INTEGER NOT NULL,
    declared_value_cents INTEGER, fragile INTEGER NOT NULL DEFAULT 0);
CREATE TABLE trips (trip_id INTEGER PRIMARY KEY,
    vehicle_id INTEGER NOT NULL REFERENCES vehicles (vehicle_id),
    driver_id INTEGER NOT NULL REFERENCES staff (staff_id), departed_ts INTEGER NOT NULL,
    returned_ts INTEGER, distance_m INTEGER NOT NULL);
CREATE TABLE trip_stops (trip_id INTEGER NOT NULL REFERENCES trips (trip_id),
    shipment_id INTEGER NOT NULL REFERENCES shipments (shipment_id), stop_seq INTEGER NOT NULL,
    PRIMARY KEY (trip_id, stop_seq));
CREATE TABLE fuel_purchases (purchase_id INTEGER PRIMARY KEY,
    vehicle_id INTEGER NOT NULL REFERENCES vehicles (vehicle_id), purchased_on TEXT NOT NULL,
    volume_ml INTEGER NOT NULL, price_cents INTEGER NOT NULL);
CREATE TABLE maintenance_jobs (job_id INTEGER PRIMARY KEY,
    vehicle_id INTEGER NOT NULL REFERENCES vehicles (vehicle_id),
    mechanic_id INTEGER REFERENCES staff (staff_id), kind TEXT NOT NULL, opened_on TEXT NOT NULL,
    closed_on TEXT, cost_cents INTEGER);
"""

REGIONS = [("N", "North Coast"), ("E", "Eastern Plains"), ("S", "South Valley"),
           ("W", "Western Hills"), ("C", "Capital Area")]
DEPOTS = [(1, "Harbour Road", "N", "2012-04-02"), (2, "Millbrook", "E", "2015-09-14"),
          (3, "Stonebridge", "S", "2017-03-06"), (4, "Ridgeway", "W", "2019-11-18"),
          (5, "Central Yard", "C", "2010-01-11")]
MODELS = [("Iveco Daily", 1400), ("Ford Transit", 1100), ("Mercedes Sprinter", 1300),
          ("Renault Master", 1200), ("MAN TGL", 5000)]
FIRST = ["Ada", "Bram", "Cleo", "Dario", "Edda", "Femi", "Gus", "Hana", "Ivo", "Joss", "Kira",
         "Luca", "Mira", "Nils", "Olga", "Pim", "Quinn", "Rhea", "Sami", "Theo", "Uma", "Vik",
         "Wren", "Yara", "Zeno"]
LAST = ["Abbott", "Brandt", "Castell", "Drummond", "Eklund", "Foley", "Grimaldi", "Holm",
        "Iqbal", "Janssen", "Kowal", "Lindgren", "Marsh", "Nakamura", "Okafor", "Price",
        "Quist", "Romero", "Sato", "Tanaka", "Vogel", "Whitaker"]
BUSINESSES = ["Alder Hardware", "Bluefin Seafood", "Copperleaf Books", "Dunmore Dairy",
              "Elmstead Pharmacy", "Foxglove Florists", "Greystone Tiles", "Hollow Oak Toys",
              "Ironvale Tools", "Juniper Outdoor", "Kingsley Wines", "Larch Furniture",
              "Marigold Bakery", "Nettle Apparel", "Oakridge Garden", "Pebble Electronics",
              "Quarry Coffee", "Redwing Cycles", "Saltmarsh Soap", "Thistle Textiles"]
MAINTENANCE = ["tyres", "brakes", "service", "bodywork", "electrics"]
START, END = date(2023, 1, 1), date(2025, 6, 30)


def _day(start: date, end: date, rng: random.Random) -> date:
    return start + timedelta(days=rng.randrange((end - start).days + 1))


def _epoch(day: date, rng: random.Random) -> int:
    moment = datetime(day.year, day.month, day.day, rng.randint(6, 19), rng.randrange(60),
                      rng.randrange(60), tzinfo=timezone.utc)
    return int(moment.timestamp())


def _name(rng: random.Random, taken: set) -> str:
    while True:
        name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
        if name not in taken:
            taken.add(name)
            return name


def build(path: Path) -> Path:
    """Write the database to ``path`` (replaced if there); the same file for the same seed."""
    rng = random.Random(SEED)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO regions VALUES (?, ?)", REGIONS)
    db.executemany("INSERT INTO depots VALUES (?, ?, ?, ?)", DEPOTS)

    # staff: a depot manager (no supervisor) per depot, then drivers, dispatchers and mechanics
    # reporting to their depot's manager, a few supervised by a dispatcher instead
    names: set = set()
    staff = []
    for depot_id, *_ in DEPOTS:
        staff.append((depot_id, _name(rng, names), "manager", depot_id,
                      _day(date(2010, 1, 1), date(2018, 12, 31), rng).isoformat(), None))
    roles = ["driver"] * 34 + ["dispatcher"] * 7 + ["mechanic"] * 9
    rng.shuffle(roles)
    for staff_id, role in enumerate(roles, start=len(DEPOTS) + 1):
        depot = rng.choice([1, 2, 2, 3, 4, 5, 5, 5])
        staff.append((staff_id, _name(rng, names), role, depot,
                      _day(date(2014, 1, 1), date(2024, 3, 31), rng).isoformat(), depot))
    dispatchers = [s[0] for s in staff if s[2] == "dispatcher"]
    staff = [s if s[2] != "driver" or rng.random() > 0.25 else
             (*s[:5], rng.choice(dispatchers)) for s in staff]
    db.executemany("INSERT INTO staff VALUES (?, ?, ?, ?, ?, ?)", staff)
    drivers = [s for s in staff if s[2] == "driver"]
    mechanics = [s[0] for s in staff if s[2] == "mechanic"]
    reps = [s[0] for s in staff if s[2] == "dispatcher"]

    vehicles = []
    for vehicle_id in range(1, 31):
        model, payload = rng.choice(MODELS)
        depot = None if vehicle_id % 4 == 0 else rng.choice([1, 2, 3, 4, 5, 5])
        since = _day(date(2016, 1, 1), date(2023, 6, 30), rng)
        retired = _day(date(2023, 7, 1), date(2025, 5, 31), rng) if rng.random() < 0.2 else None
        vehicles.append((vehicle_id, f"FR-{rng.randint(100, 999)}-{chr(65 + vehicle_id % 26)}"
                         f"{chr(65 + rng.randrange(26))}", model, depot, payload,
                         since.isoformat(), retired.isoformat() if retired else None))
    db.executemany("INSERT INTO vehicles VALUES (?, ?, ?, ?, ?, ?, ?)", vehicles)

    customers = []
    for customer_id in range(1, 71):
        business = customer_id <= len(BUSINESSES)
        name = BUSINESSES[customer_id - 1] if business else _name(rng, names)
        customers.append((customer_id, name, "business" if business else "private",
                          rng.choice(REGIONS)[0],
                          rng.choice(reps) if business and rng.random() > 0.15 else None))
    db.executemany("INSERT INTO customers VALUES (?, ?, ?, ?, ?)", customers)

    shipments = []
    for shipment_id in range(1, 1601):
        customer = rng.choice(customers) if rng.random() < 0.5 else \
            customers[rng.randrange(len(BUSINESSES))]
        created = _epoch(_day(START, END, rng), rng)
        status = rng.choices(["delivered", "in_transit", "returned", "lost"], [85, 6, 7, 2])[0]
        delivered = created + rng.randint(4 * 3600, 96 * 3600) if status == "delivered" else None
        parcels = [(rng.randrange(200, 30_001, 50), rng.randrange(500, 80_001, 100)
                    if rng.random() > 0.2 else None, int(rng.random() < 0.15))
                   for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 4]))]
        base = 450 + sum(w // 100 * 3 for w, _, _ in parcels)
        charge = round(base * (1.08 if created >= 1_704_067_200 else 1.05))  # fuel surcharge
        shipments.append((shipment_id, customer[0], rng.choice([1, 2, 3, 4, 5, 5]),
                          rng.choice(REGIONS)[0], created, delivered, status, charge))
        db.executemany("INSERT INTO parcels (shipment_id, weight_g, declared_value_cents, "
                       "fragile) VALUES (?, ?, ?, ?)", [(shipment_id, *p) for p in parcels])
    db.executemany("INSERT INTO shipments VALUES (?, ?, ?, ?, ?, ?, ?, ?)", shipments)

    by_depot: dict = {}
    for s in shipments:
        by_depot.setdefault(s[2], []).append(s)
    trip_id = 0
    for depot, waiting in sorted(by_depot.items()):
        waiting.sort(key=lambda s: s[4])
        own = [v for v in vehicles if v[3] == depot] or [v for v in vehicles if v[3] is None]
        pool = [v for v in vehicles if v[3] is None]
        crew = [d for d in drivers if d[3] == depot] or drivers
        while waiting:
            stops = rng.randint(2, 6)
            load, waiting = waiting[:stops], waiting[stops:]
            trip_id += 1
            vehicle = rng.choice(pool) if rng.random() < 0.15 else rng.choice(own)
            driver = rng.choice(drivers) if rng.random() < 0.1 else rng.choice(crew)
            departed = max(s[4] for s in load) + rng.randint(1800, 6 * 3600)
            returned = departed + rng.randint(3 * 3600, 11 * 3600) \
                if departed < 1_751_000_000 else None
            db.execute("INSERT INTO trips VALUES (?, ?, ?, ?, ?, ?)",
                       (trip_id, vehicle[0], driver[0], departed, returned,
                        rng.randint(18_000, 260_000)))
            db.executemany("INSERT INTO trip_stops VALUES (?, ?, ?)",
                           [(trip_id, s[0], n) for n, s in enumerate(load, start=1)])

    for vehicle in vehicles:
        last = date.fromisoformat(vehicle[6]) if vehicle[6] else END
        first = max(date.fromisoformat(vehicle[5]), START)
        for _ in range(rng.randint(15, 45) if vehicle[4] < 5000 else rng.randint(30, 60)):
            volume_ml = rng.randint(35_000, 90_000 if vehicle[4] < 5000 else 220_000)
            db.execute("INSERT INTO fuel_purchases (vehicle_id, purchased_on, volume_ml, "
                       "price_cents) VALUES (?, ?, ?, ?)",
                       (vehicle[0], _day(first, last, rng).isoformat(), volume_ml,
                        round(volume_ml * rng.uniform(0.158, 0.192))))
    for vehicle in vehicles:
        if vehicle[0] % 7 == 3:
            continue  # never serviced in these books
        for _ in range(rng.randint(1, 6)):
            opened = _day(max(date.fromisoformat(vehicle[5]), START), END, rng)
            closed = opened + timedelta(days=rng.randint(0, 12)) if rng.random() > 0.12 else None
            closed = closed if closed and closed <= END else None
            db.execute("INSERT INTO maintenance_jobs (vehicle_id, mechanic_id, kind, opened_on, "
                       "closed_on, cost_cents) VALUES (?, ?, ?, ?, ?, ?)",
                       (vehicle[0], rng.choice(mechanics) if rng.random() > 0.1 else None,
                        rng.choice(MAINTENANCE), opened.isoformat(),
                        closed.isoformat() if closed else None,
                        rng.randrange(8_000, 240_000, 500) if closed else None))
    db.commit()
    db.close()
    return path


if __name__ == "__main__":
    import sys

    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "freight_ops.sqlite")))
