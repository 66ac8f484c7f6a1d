"""university.sqlite: departments, courses, sections per term and graded enrolments.

Students take courses mostly in their major, grades follow each student's ability, the
current term has no grades yet, some students are undeclared or drop out, and courses have
prerequisites: joins across five tables and NULLs that mean something.
"""

from __future__ import annotations

import random
import sqlite3
from datetime import date

from .synth import email_address, person
from .writing import insert, insert_tables

NAME = "university"

DDL = """
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


def fill(conn: sqlite3.Connection, rng: random.Random) -> None:
    depts = [(i, code, name, bld, budget)
             for i, (code, name, bld, budget, _) in enumerate(DEPARTMENTS, 1)]
    insert(conn, "departments", depts)
    dept_of = {code: i for i, code, *_ in depts}

    instructors, by_dept = [], {i: [] for i in dept_of.values()}
    titles = [("Professor", 155_000), ("Associate Professor", 118_000),
              ("Assistant Professor", 96_000), ("Lecturer", 72_000)]
    for code, did in dept_of.items():
        for _ in range(rng.randint(4, 8) + (3 if code == "CS" else 0)):
            first, last = person(rng)
            title, base = rng.choices(titles, [30, 25, 25, 20])[0]
            junior = title == "Assistant Professor"
            hired = rng.randint(2016, 2023) if junior else rng.randint(1992, 2023)
            market = 1.15 if code in ("CS", "ECON") else 1.0
            salary = round(base * rng.uniform(0.88, 1.18) * market, -2)
            iid = len(instructors) + 1
            instructors.append((iid, first, last, did, title, hired, salary))
            by_dept[did].append(iid)
    insert(conn, "instructors", instructors)

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
    insert_tables(conn, courses=courses, prerequisites=prereqs)

    terms = []
    for tid, (season, year) in enumerate(TERMS, 1):
        start, end = ((date(year, 9, 2), date(year, 12, 18)) if season == "Fall"
                      else (date(year, 1, 16), date(year, 5, 10)))
        terms.append((tid, f"{season} {year}", year, season, start.isoformat(), end.isoformat()))
    insert(conn, "terms", terms)

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
    insert(conn, "sections", sections)
    capacity = {s[0]: s[5] for s in sections}

    students, enrolls = [], []
    emails: set[str] = set()
    major_w = [w for *_, w in DEPARTMENTS]
    seats = {sid: 0 for sid in capacity}
    for stid in range(1, 1401):
        first, last = person(rng)
        year = rng.choices([2021, 2022, 2023, 2024], [22, 25, 26, 27])[0]
        undeclared = year == 2024 and rng.random() < 0.35 or rng.random() < 0.04
        major = None if undeclared else rng.choices(list(dept_of.values()), major_w)[0]
        advisor = rng.choice(by_dept[major]) if major else None
        email = email_address(first, last, emails, ["students.example.edu"], rng)
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
    insert_tables(conn, students=students, enrollments=enrolls)
