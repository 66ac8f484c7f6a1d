"""A consultancy's people-operations database, generated, for questions on a schema nobody tuned for.

Eleven tables the way a real back office keeps them, not the way a benchmark does: money in
cents, durations in milliseconds, salaries as a history of changes, employees without a
department, managers as employees, invoices whose stored total includes tax (their lines do
not), account managers who are employees and customers who are companies. Every value is drawn
from one seeded generator, so the file is the same on every machine. Its questions, written with
their gold SQL and checked by ``bench/unseen_sets.py``, are in ``people_ops_questions.json``.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date, timedelta
from pathlib import Path

SEED = 20261207
SCHEMA = """
CREATE TABLE countries (country_code TEXT PRIMARY KEY, country_name TEXT NOT NULL);
CREATE TABLE offices (office_id INTEGER PRIMARY KEY, city TEXT NOT NULL,
    country_code TEXT NOT NULL REFERENCES countries (country_code), opened_on TEXT);
CREATE TABLE departments (dept_id INTEGER PRIMARY KEY, dept_name TEXT NOT NULL,
    parent_dept_id INTEGER REFERENCES departments (dept_id), cost_center TEXT);
CREATE TABLE jobs (job_code TEXT PRIMARY KEY, job_title TEXT NOT NULL,
    min_salary_cents INTEGER, max_salary_cents INTEGER);
CREATE TABLE employees (emp_id INTEGER PRIMARY KEY, first_name TEXT NOT NULL,
    last_name TEXT NOT NULL, email TEXT, hire_date TEXT NOT NULL, termination_date TEXT,
    dept_id INTEGER REFERENCES departments (dept_id),
    manager_emp_id INTEGER REFERENCES employees (emp_id),
    office_id INTEGER REFERENCES offices (office_id), job_code TEXT REFERENCES jobs (job_code));
CREATE TABLE salary_changes (change_id INTEGER PRIMARY KEY,
    emp_id INTEGER NOT NULL REFERENCES employees (emp_id), effective_from TEXT NOT NULL,
    annual_salary_cents INTEGER NOT NULL);
CREATE TABLE projects (project_id INTEGER PRIMARY KEY, project_name TEXT NOT NULL,
    dept_id INTEGER REFERENCES departments (dept_id), budget_cents INTEGER,
    started_on TEXT, closed_on TEXT);
CREATE TABLE timesheet_entries (entry_id INTEGER PRIMARY KEY,
    emp_id INTEGER NOT NULL REFERENCES employees (emp_id), work_date TEXT NOT NULL,
    duration_ms INTEGER NOT NULL, project_id INTEGER REFERENCES projects (project_id));
CREATE TABLE clients (client_id INTEGER PRIMARY KEY, company_name TEXT NOT NULL,
    country_code TEXT REFERENCES countries (country_code),
    account_manager_id INTEGER REFERENCES employees (emp_id));
CREATE TABLE invoices (invoice_id INTEGER PRIMARY KEY,
    client_id INTEGER NOT NULL REFERENCES clients (client_id), issued_on TEXT NOT NULL,
    status TEXT NOT NULL, total_cents INTEGER NOT NULL);
CREATE TABLE invoice_lines (line_id INTEGER PRIMARY KEY,
    invoice_id INTEGER NOT NULL REFERENCES invoices (invoice_id),
    project_id INTEGER REFERENCES projects (project_id), hours REAL NOT NULL,
    rate_cents INTEGER NOT NULL);
"""

COUNTRIES = [("DE", "Germany"), ("FR", "France"), ("NL", "Netherlands"), ("ES", "Spain"),
             ("PL", "Poland"), ("SE", "Sweden"), ("GB", "United Kingdom"), ("US", "United States")]
OFFICES = [("Berlin", "DE", "2014-03-01"), ("Munich", "DE", "2019-09-15"),
           ("Lyon", "FR", "2016-01-10"), ("Amsterdam", "NL", "2015-06-01"),
           ("Madrid", "ES", "2020-02-03"), ("Warsaw", "PL", "2021-11-08")]
DEPARTMENTS = [(1, "Delivery", None, "CC-100"), (2, "Data Engineering", 1, "CC-110"),
               (3, "Cloud Platform", 1, "CC-120"), (4, "Design", 1, "CC-130"),
               (5, "Sales", None, "CC-200"), (6, "Finance", None, "CC-300"),
               (7, "People", None, "CC-400"), (8, "Security", 1, "CC-140")]
JOBS = [("ENG1", "Software Engineer", 5_200_000, 7_000_000),
        ("ENG2", "Senior Software Engineer", 6_800_000, 9_200_000),
        ("DATA", "Data Engineer", 6_000_000, 8_500_000),
        ("DSGN", "Product Designer", 5_000_000, 7_200_000),
        ("MGR", "Engineering Manager", 8_500_000, 11_500_000),
        ("SALE", "Account Executive", 4_800_000, 7_500_000),
        ("FIN", "Financial Analyst", 5_000_000, 7_000_000),
        ("HR", "People Partner", 4_600_000, 6_400_000),
        ("SEC", "Security Engineer", 7_000_000, 9_800_000)]
DEPT_JOBS = {1: ["MGR"], 2: ["DATA", "ENG1", "ENG2"], 3: ["ENG1", "ENG2", "SEC"],
             4: ["DSGN"], 5: ["SALE"], 6: ["FIN"], 7: ["HR"], 8: ["SEC", "ENG2"]}
FIRST = ["Anna", "Ben", "Chiara", "Dmitri", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas",
         "Kasia", "Lena", "Marek", "Nora", "Oscar", "Paula", "Quentin", "Rosa", "Sven", "Tara",
         "Ugo", "Vera", "Wim", "Xenia", "Yusuf", "Zofia", "Amir", "Birte", "Carlos", "Dana"]
LAST = ["Keller", "Novak", "Meyer", "Dubois", "Jansen", "Garcia", "Kowalski", "Lindqvist",
        "Rossi", "Schulz", "Moreau", "de Vries", "Ortega", "Nowak", "Berg", "Fischer",
        "Laurent", "Bakker", "Ruiz", "Wojcik"]
COMPANIES = ["Acme Logistics", "Brightwave Energy", "Cobalt Insurance", "Delta Foods",
             "Evergreen Health", "Fjord Shipping", "Granite Bank", "Helix Pharma",
             "Ionic Retail", "Juniper Telecom", "Kestrel Airlines", "Lumen Media",
             "Meridian Hotels", "Northstar Mobility", "Orbit Games"]
PROJECTS = ["Data lake migration", "Checkout redesign", "Fraud scoring", "Cloud cost review",
            "Mobile app rewrite", "Warehouse analytics", "Identity platform", "Pricing engine",
            "Customer portal", "Security audit", "Churn model", "API gateway", "Design system",
            "Invoice automation", "Route planner", "Claims triage"]


def _day(start: date, end: date, rng: random.Random) -> date:
    return start + timedelta(days=rng.randrange((end - start).days + 1))


def build(path: Path) -> Path:
    """Write the database to ``path`` (replaced if there); the same file for the same seed."""
    rng = random.Random(SEED)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    db.executemany("INSERT INTO countries VALUES (?, ?)", COUNTRIES)
    db.executemany("INSERT INTO offices (city, country_code, opened_on) VALUES (?, ?, ?)", OFFICES)
    db.executemany("INSERT INTO departments VALUES (?, ?, ?, ?)", DEPARTMENTS)
    db.executemany("INSERT INTO jobs VALUES (?, ?, ?, ?)", JOBS)

    employees = []
    for emp_id in range(1, 121):
        dept = rng.choice([1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 7, 8, None]) if emp_id > 8 else \
            [1, 2, 3, 4, 5, 6, 7, 8][emp_id - 1]
        job = "MGR" if emp_id <= 8 else rng.choice(DEPT_JOBS[dept] if dept else ["ENG1", "HR"])
        hired = _day(date(2015, 1, 1), date(2024, 6, 30), rng)
        left = _day(hired + timedelta(days=200), date(2025, 6, 30), rng) \
            if rng.random() < 0.18 and emp_id > 8 else None
        first, last = rng.choice(FIRST), rng.choice(LAST)
        manager = None if emp_id <= 8 else (dept if dept else rng.randint(1, 8))
        employees.append((emp_id, first, last,
                          f"{first.lower()}.{last.lower().replace(' ', '')}{emp_id}@example.com",
                          hired.isoformat(), left.isoformat() if left else None, dept, manager,
                          rng.randint(1, len(OFFICES)), job))
    db.executemany("INSERT INTO employees VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", employees)

    jobs = {code: (low, high) for code, _, low, high in JOBS}
    for emp in employees:
        low, high = jobs[emp[9]]
        salary = rng.randrange(low, high, 50_000)
        when = date.fromisoformat(emp[4])
        end = date.fromisoformat(emp[5]) if emp[5] else date(2025, 6, 30)
        while when <= end:
            db.execute("INSERT INTO salary_changes (emp_id, effective_from, annual_salary_cents)"
                       " VALUES (?, ?, ?)", (emp[0], when.isoformat(), salary))
            when += timedelta(days=rng.randint(300, 500))
            salary = int(salary * rng.uniform(1.02, 1.09)) // 100 * 100

    projects = []
    for project_id, name in enumerate(PROJECTS, start=1):
        started = _day(date(2022, 1, 1), date(2024, 10, 1), rng)
        closed = started + timedelta(days=rng.randint(90, 400)) if rng.random() < 0.5 else None
        projects.append((project_id, name, rng.choice([2, 3, 3, 4, 8]),
                         rng.randrange(5_000_000, 80_000_000, 100_000), started.isoformat(),
                         closed.isoformat() if closed and closed < date(2025, 6, 30) else None))
    db.executemany("INSERT INTO projects VALUES (?, ?, ?, ?, ?, ?)", projects)

    active = [e for e in employees if e[6] in (2, 3, 4, 8)]
    for emp in active:
        for _ in range(rng.randint(20, 45)):
            project = rng.choice(projects)
            day = _day(date.fromisoformat(project[4]), date(2025, 6, 30), rng)
            db.execute("INSERT INTO timesheet_entries (emp_id, work_date, duration_ms, "
                       "project_id) VALUES (?, ?, ?, ?)",
                       (emp[0], day.isoformat(), rng.randrange(1, 19) * 30 * 60 * 1000,
                        project[0] if rng.random() > 0.1 else None))

    sales = [e[0] for e in employees if e[6] == 5]
    for client_id, company in enumerate(COMPANIES, start=1):
        db.execute("INSERT INTO clients VALUES (?, ?, ?, ?)",
                   (client_id, company, rng.choice(COUNTRIES)[0],
                    rng.choice(sales) if rng.random() > 0.1 else None))
    for invoice_id in range(1, 241):
        client = rng.randint(1, len(COMPANIES))
        issued = _day(date(2023, 1, 1), date(2025, 6, 30), rng)
        lines = [(rng.choice(projects)[0], rng.randrange(4, 161) / 2,
                  rng.randrange(9_000, 18_001, 500)) for _ in range(rng.randint(1, 4))]
        net = sum(round(hours * rate) for _, hours, rate in lines)
        status = rng.choices(["paid", "sent", "overdue", "void"], [70, 15, 10, 5])[0]
        db.execute("INSERT INTO invoices VALUES (?, ?, ?, ?, ?)",
                   (invoice_id, client, issued.isoformat(), status, round(net * 1.2)))
        db.executemany("INSERT INTO invoice_lines (invoice_id, project_id, hours, rate_cents) "
                       "VALUES (?, ?, ?, ?)", [(invoice_id, *line) for line in lines])
    db.commit()
    db.close()
    return path


if __name__ == "__main__":
    import sys

    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else "people_ops.sqlite")))
