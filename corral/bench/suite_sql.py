"""sqlite3's input in the debian suite (corral/bench/suite.py): a script of
SQL for an in-memory database, `orders-N.sql`.

It makes a shop's tables, inserts N orders with their items in one
transaction, builds indexes, and asks what a report would: joins, grouping,
sorting, a window function, a recursive common table expression and
string aggregation. sqlite3 spends its heap on the page cache, prepared
statements, and the sorter's and aggregates' records. Seeded: one size is
one script on every machine.
"""

from corral.bench import seeded

SCHEMA = """\
CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, tier INTEGER);
CREATE TABLE product(id INTEGER PRIMARY KEY, label TEXT, price REAL);
CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, day INTEGER, note TEXT);
CREATE TABLE item(orders INTEGER, product INTEGER, quantity INTEGER);
"""
QUERIES = """\
CREATE INDEX item_orders ON item(orders);
CREATE INDEX orders_customer ON orders(customer);
SELECT c.city, count(DISTINCT o.id), sum(i.quantity * p.price)
  FROM orders o JOIN customer c ON c.id = o.customer JOIN item i ON i.orders = o.id
  JOIN product p ON p.id = i.product GROUP BY c.city ORDER BY 3 DESC LIMIT 8;
SELECT name, total FROM (SELECT c.name, sum(i.quantity) AS total,
  rank() OVER (PARTITION BY c.tier ORDER BY sum(i.quantity) DESC) AS r
  FROM customer c JOIN orders o ON o.customer = c.id JOIN item i ON i.orders = o.id GROUP BY c.id)
  WHERE r <= 2 ORDER BY total DESC, name;
WITH RECURSIVE week(n) AS (SELECT 0 UNION ALL SELECT n + 7 FROM week WHERE n < 350)
SELECT week.n, count(o.id) FROM week LEFT JOIN orders o ON o.day BETWEEN week.n AND week.n + 6
  GROUP BY week.n ORDER BY 2 DESC, 1 LIMIT 5;
SELECT p.label, length(group_concat(o.note, '|')) FROM product p JOIN item i ON i.product = p.id
  JOIN orders o ON o.id = i.orders WHERE o.note LIKE '%rush%' GROUP BY p.id ORDER BY 2 DESC, 1 LIMIT 5;
UPDATE orders SET note = upper(note) WHERE day % 5 = 0;
DELETE FROM item WHERE quantity = 1;
SELECT count(*), sum(quantity), max(length(note)) FROM item JOIN orders ON orders.id = item.orders;
"""
CITIES = ("Aberdeen", "Bergen", "Cork", "Dresden", "Evora", "Florence", "Ghent", "Hamburg")
WORDS = ("rush", "gift", "fragile", "back door", "call first", "weekend", "spare", "boxed")


def orders_sql(orders: int) -> str:
    """The script for `orders` orders, its tables in proportion."""
    rng = seeded.rng(orders)
    customers, products = max(1, orders // 8), max(20, orders // 20)
    lines = [SCHEMA, "BEGIN;"]
    for c in range(1, customers + 1):
        lines.append(f"INSERT INTO customer VALUES({c}, 'customer {rng.randrange(10**6)}', "
                     f"'{rng.choice(CITIES)}', {rng.randrange(3)});")
    for p in range(1, products + 1):
        lines.append(f"INSERT INTO product VALUES({p}, 'product {p} {rng.choice(WORDS)}', "
                     f"{rng.randrange(100, 10000) / 100});")
    for o in range(1, orders + 1):
        note = " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 4)))
        lines.append(f"INSERT INTO orders VALUES({o}, {rng.randint(1, customers)}, {rng.randrange(365)}, "
                     f"'{note}');")
        for _ in range(rng.randint(1, 6)):
            lines.append(f"INSERT INTO item VALUES({o}, {rng.randint(1, products)}, {rng.randint(1, 9)});")
    lines += ["COMMIT;", QUERIES]
    return "\n".join(lines)
