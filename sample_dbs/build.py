"""Builds the three demo SQLite databases shipped with the studio.

The data is synthetic but shaped like real data -- skewed popularity, seasonality, customers who
never order, open loans with no return date -- so that the example questions have interesting
answers and the agents meet the same pitfalls they meet on real databases. Everything is drawn
from one seeded generator per database and fixed calendar dates, so a rebuild gives the same
bytes and the reference SQL in ``questions.json`` keeps its answers.

    python -m sample_dbs.build [--out DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import sqlite3
from datetime import date, timedelta
from pathlib import Path
from typing import Callable, Sequence

SAMPLE_DIR = Path(__file__).resolve().parent
SEED = 42

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


def build_all(out_dir: Path | str = SAMPLE_DIR) -> list[Path]:
    """Build every sample database into ``out_dir`` (replacing old files) and return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return [_write_db(out / f"{name}.sqlite", ddl, fill) for name, ddl, fill in _DATABASES]


# --------------------------------------------------------------------------------------------
# Shared helpers


Filler = Callable[[sqlite3.Connection, random.Random], None]


def _write_db(path: Path, ddl: str, fill: Filler) -> Path:
    """Create the file next to its final place and move it over, so readers never see half a DB."""
    tmp = path.with_name(path.name + ".building")
    tmp.unlink(missing_ok=True)
    conn = sqlite3.connect(tmp)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.executescript(ddl)
        with conn:
            fill(conn, random.Random(SEED))
        problems = conn.execute("PRAGMA foreign_key_check").fetchall()
        if problems:
            raise RuntimeError(f"{path.name}: foreign key violations {problems[:5]}")
        conn.execute("VACUUM")
    except BaseException:
        conn.close()
        tmp.unlink(missing_ok=True)
        raise
    conn.close()
    os.replace(tmp, path)
    return path


def _insert(conn: sqlite3.Connection, table: str, rows: Sequence[tuple]) -> None:
    if rows:
        marks = ", ".join("?" * len(rows[0]))
        conn.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)


def _day_range(start: date, end: date) -> list[date]:
    return [start + timedelta(days=i) for i in range((end - start).days + 1)]


def _pick_date(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randint(0, (end - start).days))


def _person(rng: random.Random) -> tuple[str, str]:
    return rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)


def _email(first: str, last: str, taken: set[str], domains: Sequence[str],
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


def _money(x: float) -> float:
    return round(x + 1e-9, 2)


# --------------------------------------------------------------------------------------------
# shop.sqlite -- an online store over two years of orders

SHOP_DDL = """
CREATE TABLE categories (
    category_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT
);
CREATE TABLE products (
    product_id INTEGER PRIMARY KEY,
    sku TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    category_id INTEGER NOT NULL REFERENCES categories(category_id),
    price REAL NOT NULL,
    launched_on TEXT NOT NULL,
    is_active INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE customers (
    customer_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    phone TEXT,
    city TEXT NOT NULL,
    country TEXT NOT NULL,
    signup_date TEXT NOT NULL,
    segment TEXT NOT NULL
);
CREATE TABLE orders (
    order_id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
    order_date TEXT NOT NULL,
    status TEXT NOT NULL,
    channel TEXT NOT NULL,
    shipping_fee REAL NOT NULL,
    shipped_date TEXT,
    delivered_date TEXT
);
CREATE TABLE order_items (
    order_item_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL REFERENCES orders(order_id),
    product_id INTEGER NOT NULL REFERENCES products(product_id),
    quantity INTEGER NOT NULL,
    unit_price REAL NOT NULL
);
CREATE TABLE payments (
    payment_id INTEGER PRIMARY KEY,
    order_id INTEGER NOT NULL UNIQUE REFERENCES orders(order_id),
    method TEXT NOT NULL,
    amount REAL NOT NULL,
    paid_date TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE reviews (
    review_id INTEGER PRIMARY KEY,
    product_id INTEGER NOT NULL REFERENCES products(product_id),
    customer_id INTEGER NOT NULL REFERENCES customers(customer_id),
    rating INTEGER NOT NULL CHECK (rating BETWEEN 1 AND 5),
    review_date TEXT NOT NULL,
    comment TEXT
);
CREATE INDEX idx_orders_customer ON orders(customer_id);
CREATE INDEX idx_orders_date ON orders(order_date);
CREATE INDEX idx_items_order ON order_items(order_id);
CREATE INDEX idx_items_product ON order_items(product_id);
CREATE INDEX idx_reviews_product ON reviews(product_id);
"""

SHOP_CATEGORIES: dict[str, tuple[str, float, list[tuple[str, float]]]] = {
    # name: (description, popularity weight, [(product, current price)])
    "Electronics": ("Audio, computer accessories and wearables", 3.0, [
        ("Wireless Earbuds", 59.99), ("Noise-Cancelling Headphones", 199.00),
        ("Bluetooth Speaker", 49.99), ("27-inch 4K Monitor", 329.00),
        ("Mechanical Keyboard", 89.99), ("Wireless Mouse", 24.99), ("USB-C Hub", 39.99),
        ("Portable SSD 1TB", 109.99), ("Smartwatch", 179.00), ("Fitness Tracker", 69.99),
        ("E-Reader", 129.99), ("1080p Webcam", 54.99), ("Power Bank 20000mAh", 34.99),
        ("30W Phone Charger", 19.99)]),
    "Home & Kitchen": ("Cookware, small appliances and storage", 2.6, [
        ("8-inch Chef's Knife", 64.00), ("Cast Iron Skillet", 39.50), ("Espresso Machine", 249.00),
        ("Electric Kettle", 34.99), ("Countertop Blender", 79.99), ("Air Fryer", 99.99),
        ("Nonstick Pan Set", 119.00), ("Burr Coffee Grinder", 44.99),
        ("Bamboo Cutting Board", 22.00), ("Glass Food Storage Set", 27.99),
        ("Stand Mixer", 299.00), ("2-Slice Toaster", 39.99)]),
    "Books": ("Cookbooks, guides and reference books", 1.6, [
        ("Everyday Vegetarian Cookbook", 24.95), ("World Atlas, 5th Edition", 39.00),
        ("Beginner's Guide to Python", 34.50), ("The Home Gardener's Handbook", 19.99),
        ("Photography Basics", 27.00), ("Watercolor Techniques", 22.50),
        ("Personal Finance Made Simple", 18.99), ("Travel Guide: Japan", 21.99),
        ("Children's Picture Dictionary", 14.99), ("Classic Mystery Box Set", 45.00)]),
    "Sports & Outdoors": ("Fitness, camping and outdoor gear", 2.0, [
        ("Yoga Mat", 29.99), ("Adjustable Dumbbells", 189.00), ("Trail Running Shoes", 119.00),
        ("2-Person Camping Tent", 149.00), ("Down Sleeping Bag", 129.00),
        ("Hiking Backpack 40L", 89.00), ("Insulated Water Bottle", 24.00),
        ("Cycling Helmet", 59.00), ("Resistance Bands Set", 19.99), ("Tennis Racket", 79.00),
        ("Jump Rope", 12.99)]),
    "Clothing": ("Everyday clothing and accessories", 2.2, [
        ("Cotton T-Shirt", 18.00), ("Slim Fit Jeans", 59.00), ("Merino Wool Sweater", 89.00),
        ("Waterproof Rain Jacket", 129.00), ("Leather Belt", 35.00), ("Running Shorts", 28.00),
        ("Knit Beanie", 16.00), ("Chino Trousers", 49.00), ("Hooded Sweatshirt", 45.00),
        ("Canvas Sneakers", 55.00)]),
    "Beauty & Personal Care": ("Skin care, hair care and grooming", 1.8, [
        ("Moisturizing Face Cream", 26.00), ("Mineral Sunscreen SPF 50", 18.50),
        ("Electric Toothbrush", 69.99), ("Ionic Hair Dryer", 79.00),
        ("Argan Oil Shampoo", 14.00), ("Beard Trimmer", 44.99), ("Lip Balm Trio", 9.99),
        ("Gentle Facial Cleanser", 16.50)]),
    "Toys & Games": ("Toys, puzzles and board games", 1.4, [
        ("Building Blocks Set (500 pcs)", 49.99), ("1000-Piece Jigsaw Puzzle", 19.99),
        ("Strategy Board Game", 44.00), ("Remote Control Car", 59.99),
        ("Plush Teddy Bear", 24.99), ("Party Card Game", 19.00), ("Wooden Train Set", 69.00),
        ("Junior Science Kit", 34.99)]),
    "Garden": ("Tools and supplies for the garden", 0.9, [
        ("Expandable Garden Hose", 39.99), ("Bypass Pruning Shears", 24.50),
        ("Raised Garden Bed", 119.00), ("Seed Starter Kit", 17.99),
        ("Solar Path Lights (8-pack)", 36.00), ("Metal Watering Can", 29.00),
        ("Compost Bin", 74.00)]),
    "Office Supplies": ("Desk equipment and stationery", 1.2, [
        ("A5 Notebook 3-Pack", 15.99), ("Gel Pens 12-Pack", 11.49), ("LED Desk Lamp", 42.00),
        ("Ergonomic Office Chair", 279.00), ("Standing Desk Converter", 189.00),
        ("Heavy-Duty Stapler", 18.00), ("Monitor Stand", 32.00),
        ("Cross-Cut Paper Shredder", 95.00)]),
    "Pet Supplies": ("Beds, toys and care for pets", 1.0, [
        ("Orthopedic Dog Bed", 89.00), ("Cat Scratching Post", 39.00),
        ("Stainless Pet Bowl Set", 19.99), ("Reflective Dog Leash", 16.99),
        ("Covered Cat Litter Box", 45.00), ("Aquarium Filter", 32.50)]),
}

SHOP_CITIES = [  # (city, country, weight)
    ("New York", "United States", 9), ("Los Angeles", "United States", 7),
    ("Chicago", "United States", 6), ("Houston", "United States", 4),
    ("Seattle", "United States", 4), ("Boston", "United States", 4),
    ("Austin", "United States", 3), ("Denver", "United States", 2),
    ("Toronto", "Canada", 5), ("Vancouver", "Canada", 3), ("Montreal", "Canada", 3),
    ("London", "United Kingdom", 7), ("Manchester", "United Kingdom", 3),
    ("Edinburgh", "United Kingdom", 2), ("Dublin", "Ireland", 2),
    ("Berlin", "Germany", 4), ("Munich", "Germany", 3), ("Hamburg", "Germany", 2),
    ("Paris", "France", 4), ("Lyon", "France", 2), ("Madrid", "Spain", 3),
    ("Barcelona", "Spain", 2), ("Amsterdam", "Netherlands", 3), ("Stockholm", "Sweden", 2),
    ("Copenhagen", "Denmark", 2), ("Milan", "Italy", 2), ("Rome", "Italy", 2),
    ("Sydney", "Australia", 3), ("Melbourne", "Australia", 3), ("Auckland", "New Zealand", 1),
]

REVIEW_COMMENTS = {
    5: ["Excellent quality, exactly as described.", "Love it! Would buy again.",
        "Fast delivery and works perfectly.", "Best purchase this year."],
    4: ["Very good, minor issues with packaging.", "Good value for the price.",
        "Works well, instructions could be clearer."],
    3: ["It's okay, does the job.", "Average quality, expected a bit more.",
        "Arrived late but the product is fine."],
    2: ["Disappointed, feels cheap.", "Stopped working after a few weeks."],
    1: ["Broken on arrival.", "Not as described, returned it."],
}

SHOP_START, SHOP_END = date(2023, 1, 1), date(2024, 12, 31)


def _fill_shop(conn: sqlite3.Connection, rng: random.Random) -> None:
    categories, products = [], []
    product_weight: dict[int, float] = {}
    product_price: dict[int, float] = {}
    product_launch: dict[int, date] = {}
    product_quality: dict[int, float] = {}
    for cid, (cname, (desc, cweight, items)) in enumerate(SHOP_CATEGORIES.items(), start=1):
        categories.append((cid, cname, desc))
        for rank, (pname, price) in enumerate(items, start=1):
            pid = len(products) + 1
            # Most of the catalogue predates the data; a few items launch during it.
            launched = (_pick_date(rng, date(2019, 3, 1), date(2022, 12, 1)) if rng.random() < 0.8
                        else _pick_date(rng, date(2023, 2, 1), date(2024, 11, 15)))
            active = 0 if rng.random() < 0.07 else 1
            sku = f"{cname[:3].upper()}-{1000 + pid * 7}"
            products.append((pid, sku, pname, cid, price, launched.isoformat(), active))
            product_weight[pid] = cweight / rank ** 0.8 * (0.4 if not active else 1.0)
            product_price[pid] = price
            product_launch[pid] = launched
            product_quality[pid] = rng.uniform(3.3, 4.8)
    _insert(conn, "categories", categories)
    _insert(conn, "products", products)

    city_pool = [(c, k) for c, k, _ in SHOP_CITIES]
    city_w = [w for *_, w in SHOP_CITIES]
    customers, signup, activity = [], {}, {}
    emails: set[str] = set()
    for cust_id in range(1, 901):
        first, last = _person(rng)
        city, country = rng.choices(city_pool, city_w)[0]
        # Sign-ups grow over time: the square root skews dates towards the recent end.
        span = (date(2024, 12, 15) - date(2021, 1, 1)).days
        joined = date(2021, 1, 1) + timedelta(days=int(span * math.sqrt(rng.random())))
        segment = rng.choices(["Consumer", "Small Business", "Corporate"], [75, 17, 8])[0]
        phone = (None if rng.random() < 0.3
                 else f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}")
        email = _email(first, last, emails, ["example.com", "example.org", "example.net"], rng)
        customers.append((cust_id, first, last, email, phone, city, country, joined.isoformat(),
                          segment))
        signup[cust_id] = joined
        activity[cust_id] = rng.lognormvariate(0, 1.0) * (2.5 if segment == "Corporate" else 1.0)
    _insert(conn, "customers", customers)

    days = _day_range(SHOP_START, SHOP_END)
    day_w = []
    for d in days:
        w = 1.0 + 0.25 * (d.year - 2023) + 0.02 * d.month
        w *= 1.7 if d.month in (11, 12) else 1.0
        w *= 1.2 if d.weekday() >= 5 else 1.0
        day_w.append(w)
    cust_ids = list(activity)
    cust_w = [activity[c] for c in cust_ids]
    pids = list(product_weight)
    prod_w = [product_weight[p] for p in pids]

    orders, items, payments, reviews = [], [], [], []
    order_dates = sorted(rng.choices(days, day_w, k=3600))
    for order_id, day in enumerate(order_dates, start=1):
        while True:
            cust = rng.choices(cust_ids, cust_w)[0]
            if signup[cust] <= day:
                break
        age = (SHOP_END - day).days
        ship = day + timedelta(days=rng.choice([0, 1, 1, 1, 2, 2, 3]))
        arrive = ship + timedelta(days=rng.randint(2, 7))
        roll = rng.random()
        if roll < 0.05:
            status, ship_s, arrive_s = "cancelled", None, None
        elif arrive > SHOP_END or age < 3:
            status, ship_s, arrive_s = "shipped", ship.isoformat(), None
        elif roll < 0.09:
            status, ship_s, arrive_s = "returned", ship.isoformat(), arrive.isoformat()
        else:
            status, ship_s, arrive_s = "delivered", ship.isoformat(), arrive.isoformat()
        channel = rng.choices(["web", "mobile app", "marketplace"], [55, 35, 10])[0]

        total = 0.0
        chosen: set[int] = set()
        for _ in range(rng.choices([1, 2, 3, 4, 5], [45, 28, 15, 8, 4])[0]):
            pid = rng.choices(pids, prod_w)[0]
            if pid in chosen or product_launch[pid] > day:
                continue
            chosen.add(pid)
            qty = rng.choices([1, 2, 3, 4], [78, 15, 5, 2])[0]
            price = product_price[pid] * (0.95 if day.year == 2023 else 1.0)
            if rng.random() < 0.15:
                price *= 1 - rng.choice([0.10, 0.15, 0.20, 0.25])
            unit = _money(price)
            items.append((len(items) + 1, order_id, pid, qty, unit))
            total += qty * unit
            if status == "delivered" and rng.random() < 0.18:
                stars = max(1, min(5, round(rng.gauss(product_quality[pid], 0.9))))
                comment = rng.choice(REVIEW_COMMENTS[stars]) if rng.random() < 0.6 else None
                when = min(arrive + timedelta(days=rng.randint(1, 30)), SHOP_END)
                reviews.append((len(reviews) + 1, pid, cust, stars, when.isoformat(), comment))
        if not chosen:  # every order has at least one line
            pid = next(p for p in pids if product_launch[p] <= day)
            unit = _money(product_price[pid] * (0.95 if day.year == 2023 else 1.0))
            items.append((len(items) + 1, order_id, pid, 1, unit))
            total += unit
        fee = 0.0 if total >= 50 else 4.99
        orders.append((order_id, cust, day.isoformat(), status, channel, fee, ship_s, arrive_s))
        if status != "cancelled":
            method = rng.choices(
                ["credit card", "paypal", "debit card", "gift card", "bank transfer"],
                [50, 22, 18, 5, 5])[0]
            pay_status = "refunded" if status == "returned" else "captured"
            payments.append((len(payments) + 1, order_id, method, _money(total + fee),
                             day.isoformat(), pay_status))
    _insert(conn, "orders", orders)
    _insert(conn, "order_items", items)
    _insert(conn, "payments", payments)
    _insert(conn, "reviews", reviews)


# --------------------------------------------------------------------------------------------
# university.sqlite -- departments, courses, sections per term and graded enrolments

UNIVERSITY_DDL = """
CREATE TABLE departments (
    dept_id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    building TEXT NOT NULL,
    budget REAL NOT NULL
);
CREATE TABLE instructors (
    instructor_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    dept_id INTEGER NOT NULL REFERENCES departments(dept_id),
    title TEXT NOT NULL,
    hire_year INTEGER NOT NULL,
    salary REAL NOT NULL
);
CREATE TABLE students (
    student_id INTEGER PRIMARY KEY,
    first_name TEXT NOT NULL,
    last_name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    enrollment_year INTEGER NOT NULL,
    major_dept_id INTEGER REFERENCES departments(dept_id),
    advisor_id INTEGER REFERENCES instructors(instructor_id)
);
CREATE TABLE courses (
    course_id INTEGER PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    dept_id INTEGER NOT NULL REFERENCES departments(dept_id),
    credits INTEGER NOT NULL,
    level INTEGER NOT NULL
);
CREATE TABLE prerequisites (
    course_id INTEGER NOT NULL REFERENCES courses(course_id),
    prereq_course_id INTEGER NOT NULL REFERENCES courses(course_id),
    PRIMARY KEY (course_id, prereq_course_id)
);
CREATE TABLE terms (
    term_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    year INTEGER NOT NULL,
    season TEXT NOT NULL,
    start_date TEXT NOT NULL,
    end_date TEXT NOT NULL
);
CREATE TABLE sections (
    section_id INTEGER PRIMARY KEY,
    course_id INTEGER NOT NULL REFERENCES courses(course_id),
    term_id INTEGER NOT NULL REFERENCES terms(term_id),
    instructor_id INTEGER NOT NULL REFERENCES instructors(instructor_id),
    room TEXT NOT NULL,
    capacity INTEGER NOT NULL
);
CREATE TABLE enrollments (
    student_id INTEGER NOT NULL REFERENCES students(student_id),
    section_id INTEGER NOT NULL REFERENCES sections(section_id),
    status TEXT NOT NULL,
    grade TEXT,
    grade_points REAL,
    PRIMARY KEY (student_id, section_id)
);
CREATE INDEX idx_sections_course ON sections(course_id);
CREATE INDEX idx_sections_term ON sections(term_id);
CREATE INDEX idx_enrollments_section ON enrollments(section_id);
"""

DEPARTMENTS = [  # code, name, building, budget, weight as a major
    ("CS", "Computer Science", "Turing Hall", 2_450_000, 18),
    ("MATH", "Mathematics", "Euler Building", 1_320_000, 8),
    ("PHYS", "Physics", "Curie Laboratory", 1_780_000, 5),
    ("CHEM", "Chemistry", "Curie Laboratory", 1_560_000, 5),
    ("BIO", "Biology", "Darwin Center", 1_900_000, 12),
    ("ECON", "Economics", "Smith Hall", 1_150_000, 12),
    ("PSYC", "Psychology", "James Hall", 980_000, 11),
    ("HIST", "History", "Gibbon Hall", 720_000, 5),
    ("ENGL", "English", "Austen House", 690_000, 6),
]

COURSES = {  # dept code: [(number, title, credits)]
    "CS": [(101, "Introduction to Programming", 4), (120, "Discrete Structures", 3),
           (201, "Data Structures", 4), (230, "Computer Systems", 4), (310, "Algorithms", 3),
           (325, "Databases", 3), (340, "Operating Systems", 4), (365, "Machine Learning", 3),
           (410, "Compilers", 4), (450, "Distributed Systems", 3)],
    "MATH": [(101, "Calculus I", 4), (102, "Calculus II", 4), (210, "Linear Algebra", 3),
             (220, "Probability", 3), (301, "Real Analysis", 3), (330, "Abstract Algebra", 3),
             (350, "Numerical Methods", 3)],
    "PHYS": [(101, "Mechanics", 4), (102, "Electricity and Magnetism", 4),
             (210, "Waves and Optics", 3), (301, "Quantum Mechanics", 3),
             (320, "Thermodynamics", 3), (410, "Astrophysics", 3)],
    "CHEM": [(101, "General Chemistry", 4), (201, "Organic Chemistry I", 4),
             (202, "Organic Chemistry II", 4), (310, "Physical Chemistry", 3),
             (330, "Biochemistry", 3)],
    "BIO": [(101, "Cell Biology", 4), (110, "Evolution and Diversity", 3), (205, "Genetics", 3),
            (220, "Microbiology", 4), (310, "Ecology", 3), (330, "Neuroscience", 3),
            (401, "Molecular Biology", 3)],
    "ECON": [(101, "Principles of Microeconomics", 3), (102, "Principles of Macroeconomics", 3),
             (210, "Intermediate Microeconomics", 3), (220, "Econometrics", 4),
             (310, "International Trade", 3), (330, "Behavioral Economics", 3),
             (410, "Public Finance", 3)],
    "PSYC": [(101, "Introduction to Psychology", 3), (210, "Research Methods", 3),
             (220, "Developmental Psychology", 3), (310, "Cognitive Psychology", 3),
             (330, "Social Psychology", 3), (350, "Clinical Psychology", 3)],
    "HIST": [(101, "World History to 1500", 3), (102, "World History since 1500", 3),
             (230, "History of Science", 3), (310, "The Cold War", 3),
             (340, "Modern East Asia", 3)],
    "ENGL": [(101, "Academic Writing", 3), (110, "Introduction to Literature", 3),
             (220, "Shakespeare", 3), (250, "Creative Writing", 2), (310, "The Modern Novel", 3),
             (340, "Poetry Workshop", 2)],
}

GRADES = [("A", 4.0), ("A-", 3.7), ("B+", 3.3), ("B", 3.0), ("B-", 2.7), ("C+", 2.3), ("C", 2.0),
          ("C-", 1.7), ("D", 1.0), ("F", 0.0)]

TERMS = [("Fall", 2021), ("Spring", 2022), ("Fall", 2022), ("Spring", 2023), ("Fall", 2023),
         ("Spring", 2024), ("Fall", 2024)]
CURRENT_TERM = ("Fall", 2024)  # grades not yet posted


def _fill_university(conn: sqlite3.Connection, rng: random.Random) -> None:
    depts = [(i, code, name, bld, budget)
             for i, (code, name, bld, budget, _) in enumerate(DEPARTMENTS, 1)]
    _insert(conn, "departments", depts)
    dept_of = {code: i for i, code, *_ in depts}

    instructors, by_dept = [], {i: [] for i in dept_of.values()}
    titles = [("Professor", 155_000), ("Associate Professor", 118_000),
              ("Assistant Professor", 96_000), ("Lecturer", 72_000)]
    for code, did in dept_of.items():
        for _ in range(rng.randint(4, 8) + (3 if code == "CS" else 0)):
            first, last = _person(rng)
            title, base = rng.choices(titles, [30, 25, 25, 20])[0]
            junior = title == "Assistant Professor"
            hired = rng.randint(2016, 2023) if junior else rng.randint(1992, 2023)
            market = 1.15 if code in ("CS", "ECON") else 1.0
            salary = round(base * rng.uniform(0.88, 1.18) * market, -2)
            iid = len(instructors) + 1
            instructors.append((iid, first, last, did, title, hired, salary))
            by_dept[did].append(iid)
    _insert(conn, "instructors", instructors)

    courses, course_dept, prereqs = [], {}, []
    for code, items in COURSES.items():
        previous: list[tuple[int, int]] = []
        for number, title, credits in items:
            cid = len(courses) + 1
            level = number // 100 * 100
            courses.append((cid, f"{code} {number}", title, dept_of[code], credits, level))
            course_dept[cid] = dept_of[code]
            lower = [c for n, c in previous if n // 100 < number // 100]
            if lower and rng.random() < 0.8:  # most courses build on lower-level ones
                for pre in rng.sample(lower, min(len(lower), rng.choice([1, 1, 2]))):
                    prereqs.append((cid, pre))
            previous.append((number, cid))
    _insert(conn, "courses", courses)
    _insert(conn, "prerequisites", prereqs)

    terms = []
    for tid, (season, year) in enumerate(TERMS, 1):
        start, end = ((date(year, 9, 2), date(year, 12, 18)) if season == "Fall"
                      else (date(year, 1, 16), date(year, 5, 10)))
        terms.append((tid, f"{season} {year}", year, season, start.isoformat(), end.isoformat()))
    _insert(conn, "terms", terms)

    buildings = {did: bld for did, _, _, bld, _ in depts}
    sections, offered = [], {}
    for tid, *_ in terms:
        offered[tid] = []
        for cid, _, _, did, _, level in courses:
            if level >= 300 and rng.random() < 0.35:
                continue
            for _ in range(2 if level == 100 and rng.random() < 0.6 else 1):
                sid = len(sections) + 1
                floor, wing, number = rng.randint(1, 4), rng.randint(0, 3), rng.randint(1, 9)
                room = f"{buildings[did].split()[0]} {floor}{wing}{number}"
                capacity = (rng.choice([120, 80, 60]) if level == 100
                            else rng.choice([25, 30, 40, 45]))
                sections.append((sid, cid, tid, rng.choice(by_dept[did]), room, capacity))
                offered[tid].append((sid, cid, did, level))
    _insert(conn, "sections", sections)
    capacity = {s[0]: s[5] for s in sections}

    students, enrolls = [], []
    emails: set[str] = set()
    major_w = [w for *_, w in DEPARTMENTS]
    seats = {sid: 0 for sid in capacity}
    for stid in range(1, 1401):
        first, last = _person(rng)
        year = rng.choices([2021, 2022, 2023, 2024], [22, 25, 26, 27])[0]
        undeclared = year == 2024 and rng.random() < 0.35 or rng.random() < 0.04
        major = None if undeclared else rng.choices(list(dept_of.values()), major_w)[0]
        advisor = rng.choice(by_dept[major]) if major else None
        email = _email(first, last, emails, ["students.example.edu"], rng)
        students.append((stid, first, last, email, year, major, advisor))
        ability = rng.gauss(3.05, 0.55)
        taken: set[int] = set()
        dropped_out = rng.random() < 0.08
        for tid, (season, tyear) in enumerate(TERMS, 1):
            if tyear < year or (tyear == year and season == "Spring"):
                continue
            if dropped_out and rng.random() < 0.5:
                break
            current = (season, tyear) == CURRENT_TERM
            for _ in range(rng.choices([3, 4, 5], [25, 55, 20])[0]):
                pool = [o for o in offered[tid]
                        if o[1] not in taken and seats[o[0]] < capacity[o[0]]]
                if not pool:
                    break
                weights = [(4.0 if did == major else 1.0) * (1.5 if level == 100 else 1.0)
                           for _, _, did, level in pool]
                sid, cid, did, level = rng.choices(pool, weights)[0]
                taken.add(cid)
                seats[sid] += 1
                if current:
                    enrolls.append((stid, sid, "enrolled", None, None))
                elif rng.random() < 0.035:
                    enrolls.append((stid, sid, "withdrawn", "W", None))
                else:
                    score = ability + rng.gauss(0, 0.5) - 0.12 * (level // 100 - 1)
                    score = max(0.0, min(4.0, score))
                    letter, points = min(GRADES, key=lambda g: abs(g[1] - score))
                    enrolls.append((stid, sid, "completed", letter, points))
    _insert(conn, "students", students)
    _insert(conn, "enrollments", enrolls)


# --------------------------------------------------------------------------------------------
# library.sqlite -- a public library: books with many authors, members and loans

LIBRARY_DDL = """
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


def _fill_library(conn: sqlite3.Connection, rng: random.Random) -> None:
    _insert(conn, "branches", [(i, *b) for i, b in enumerate(BRANCHES, 1)])
    _insert(conn, "publishers", [(i, *p) for i, p in enumerate(PUBLISHERS, 1)])

    authors, names = [], set()
    nat_names = [n for n, _ in NATIONALITIES]
    nat_w = [w for _, w in NATIONALITIES]
    while len(authors) < 220:
        first, last = _person(rng)
        name = f"{first} {last}"
        if name in names:
            continue
        names.add(name)
        birth = None if rng.random() < 0.08 else rng.randint(1925, 1995)
        nationality = None if rng.random() < 0.05 else rng.choices(nat_names, nat_w)[0]
        authors.append((len(authors) + 1, name, birth, nationality))
    _insert(conn, "authors", authors)
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
    _insert(conn, "books", books)
    _insert(conn, "book_authors", book_authors)

    members, emails = [], set()
    for mid in range(1, 1101):
        first, last = _person(rng)
        mtype = rng.choices(["standard", "student", "senior", "family"], [55, 20, 15, 10])[0]
        span = (date(2024, 12, 1) - date(2012, 1, 1)).days
        joined = date(2012, 1, 1) + timedelta(days=int(span * rng.random() ** 0.7))
        email = (None if rng.random() < 0.12
                 else _email(first, last, emails, ["mail.example.com"], rng))
        home = rng.choices([1, 2, 3, 4], [40, 25, 20, 15])[0]
        members.append((mid, first, last, email, mtype, joined.isoformat(), home))
    _insert(conn, "members", members)

    book_ids = list(popularity)
    book_w = [popularity[b] for b in book_ids]
    reader_w = [rng.lognormvariate(0, 1.1) for _ in members]
    loan_days = _day_range(LIB_START, LIB_END)
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
            fine = _money(max(0, (back - due).days) * 0.25)
            open_copies[book] = back
        branch = member[6] if rng.random() < 0.8 else rng.randint(1, 4)
        loans.append((len(loans) + 1, book, member[0], branch, day.isoformat(), due.isoformat(),
                      returned, fine))
    _insert(conn, "loans", loans)


_DATABASES = [
    ("shop", SHOP_DDL, _fill_shop),
    ("university", UNIVERSITY_DDL, _fill_university),
    ("library", LIBRARY_DDL, _fill_library),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the demo SQLite databases.")
    parser.add_argument("--out", type=Path, default=SAMPLE_DIR,
                        help="output folder (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in build_all(args.out):
        print(f"{path}  {path.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
