"""shop.sqlite: an online store over two years of orders.

Popularity is skewed (by category and rank in it), orders are seasonal and grow year on year,
some customers never order, some products launch during the data and some are retired, and
cancelled orders have no payment: the pitfalls real sales data sets for the agents.
"""

from __future__ import annotations

import math
import random
import sqlite3
from datetime import date, timedelta

from .synth import day_range, email_address, money, person, pick_date
from .writing import insert, insert_tables

NAME = "shop"

DDL = """
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


def fill(conn: sqlite3.Connection, rng: random.Random) -> None:
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
            launched = (pick_date(rng, date(2019, 3, 1), date(2022, 12, 1)) if rng.random() < 0.8
                        else pick_date(rng, date(2023, 2, 1), date(2024, 11, 15)))
            active = 0 if rng.random() < 0.07 else 1
            sku = f"{cname[:3].upper()}-{1000 + pid * 7}"
            products.append((pid, sku, pname, cid, price, launched.isoformat(), active))
            product_weight[pid] = cweight / rank ** 0.8 * (0.4 if not active else 1.0)
            product_price[pid] = price
            product_launch[pid] = launched
            product_quality[pid] = rng.uniform(3.3, 4.8)
    insert_tables(conn, categories=categories, products=products)

    city_pool = [(c, k) for c, k, _ in SHOP_CITIES]
    city_w = [w for *_, w in SHOP_CITIES]
    customers, signup, activity = [], {}, {}
    emails: set[str] = set()
    for cust_id in range(1, 901):
        first, last = person(rng)
        city, country = rng.choices(city_pool, city_w)[0]
        # Sign-ups grow over time: the square root skews dates towards the recent end.
        span = (date(2024, 12, 15) - date(2021, 1, 1)).days
        joined = date(2021, 1, 1) + timedelta(days=int(span * math.sqrt(rng.random())))
        segment = rng.choices(["Consumer", "Small Business", "Corporate"], [75, 17, 8])[0]
        phone = (None if rng.random() < 0.3
                 else f"+1-555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}")
        email = email_address(first, last, emails,
                              ["example.com", "example.org", "example.net"], rng)
        customers.append((cust_id, first, last, email, phone, city, country, joined.isoformat(),
                          segment))
        signup[cust_id] = joined
        activity[cust_id] = rng.lognormvariate(0, 1.0) * (2.5 if segment == "Corporate" else 1.0)
    insert(conn, "customers", customers)

    days = day_range(SHOP_START, SHOP_END)
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
            unit = money(price)
            items.append((len(items) + 1, order_id, pid, qty, unit))
            total += qty * unit
            if status == "delivered" and rng.random() < 0.18:
                stars = max(1, min(5, round(rng.gauss(product_quality[pid], 0.9))))
                comment = rng.choice(REVIEW_COMMENTS[stars]) if rng.random() < 0.6 else None
                when = min(arrive + timedelta(days=rng.randint(1, 30)), SHOP_END)
                reviews.append((len(reviews) + 1, pid, cust, stars, when.isoformat(), comment))
        if not chosen:  # every order has at least one line
            pid = next(p for p in pids if product_launch[p] <= day)
            unit = money(product_price[pid] * (0.95 if day.year == 2023 else 1.0))
            items.append((len(items) + 1, order_id, pid, 1, unit))
            total += unit
        fee = 0.0 if total >= 50 else 4.99
        orders.append((order_id, cust, day.isoformat(), status, channel, fee, ship_s, arrive_s))
        if status != "cancelled":
            method = rng.choices(
                ["credit card", "paypal", "debit card", "gift card", "bank transfer"],
                [50, 22, 18, 5, 5])[0]
            pay_status = "refunded" if status == "returned" else "captured"
            payments.append((len(payments) + 1, order_id, method, money(total + fee),
                             day.isoformat(), pay_status))
    insert_tables(conn, orders=orders, order_items=items, payments=payments, reviews=reviews)
