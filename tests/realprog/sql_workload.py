"""The SQL file sqlite3 runs in tests/test_real_programs.py.

Generated (seeded, so byte-identical every time) rather than stored: a few
thousand rows are a few hundred KiB of INSERTs. Tables, indexes, joins,
GROUP BY, ORDER BY, a window function, a recursive CTE, updates and deletes:
sqlite's parser, planner, b-tree and sorter all allocate.
"""

import random

CUSTOMERS = 600
ORDERS = 4000
PRODUCTS = 150


def generate_sql(seed: int = 1122) -> str:
    rng = random.Random(seed)
    out = [
        ".headers on",
        ".mode list",
        "PRAGMA journal_mode=MEMORY;",
        "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);",
        "CREATE TABLE product(id INTEGER PRIMARY KEY, label TEXT, price REAL);",
        "CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customer(id),"
        " product INTEGER REFERENCES product(id), qty INTEGER, note TEXT);",
        "BEGIN;",
    ]
    cities = ["Oslo", "Lyon", "Porto", "Graz", "Turku", "Gent", "Brno"]
    for i in range(1, CUSTOMERS + 1):
        out.append(f"INSERT INTO customer VALUES({i}, 'customer {i:04d}', '{rng.choice(cities)}');")
    for i in range(1, PRODUCTS + 1):
        out.append(f"INSERT INTO product VALUES({i}, 'product-{i}-{'z' * rng.randrange(1, 30)}', "
                   f"{rng.randrange(100, 99999) / 100:.2f});")
    for i in range(1, ORDERS + 1):
        note = "x" * rng.randrange(0, 200)
        out.append(f"INSERT INTO orders VALUES({i}, {rng.randrange(1, CUSTOMERS + 1)}, "
                   f"{rng.randrange(1, PRODUCTS + 1)}, {rng.randrange(1, 20)}, '{note}');")
    out += [
        "COMMIT;",
        "CREATE INDEX orders_customer ON orders(customer);",
        "CREATE INDEX orders_product ON orders(product, qty);",
        "CREATE INDEX customer_city ON customer(city, name);",
        "SELECT count(*), sum(qty), max(length(note)) FROM orders;",
        "SELECT c.city, count(*) AS n, round(sum(o.qty * p.price), 2) AS revenue"
        " FROM orders o JOIN customer c ON c.id = o.customer JOIN product p ON p.id = o.product"
        " GROUP BY c.city ORDER BY revenue DESC;",
        "SELECT c.name, count(o.id) AS n FROM customer c LEFT JOIN orders o ON o.customer = c.id"
        " GROUP BY c.id HAVING n >= 12 ORDER BY n DESC, c.name LIMIT 15;",
        "SELECT p.label, sum(o.qty) AS units, rank() OVER (ORDER BY sum(o.qty) DESC) AS r"
        " FROM product p JOIN orders o ON o.product = p.id GROUP BY p.id ORDER BY r, p.id LIMIT 10;",
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 2000)"
        " SELECT count(*), sum(x), group_concat(x % 10, '') FROM n WHERE x % 7 = 3;",
        "UPDATE orders SET note = upper(note) || '-' || id WHERE qty > 15;",
        "DELETE FROM orders WHERE id % 5 = 0;",
        "SELECT qty, count(*), sum(length(note)) FROM orders GROUP BY qty ORDER BY qty;",
        "SELECT city, group_concat(name, '|') FROM (SELECT city, name FROM customer"
        " WHERE id % 97 = 1 ORDER BY name) GROUP BY city ORDER BY city;",
        "VACUUM;",
        "PRAGMA integrity_check;",
        "SELECT count(*) FROM orders o WHERE EXISTS (SELECT 1 FROM orders o2"
        " WHERE o2.customer = o.customer AND o2.product = o.product AND o2.id <> o.id);",
    ]
    return "\n".join(out) + "\n"
