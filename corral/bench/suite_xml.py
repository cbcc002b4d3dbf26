"""xalan's inputs: a generated XML document of orders and a stylesheet of
ours that reports on it.

The document is a shop's year: reference tables (`regions`, a `catalogue`
of products with prices, `customers` with a city district and a tier) and
`orders`, each with a customer, a date, a region, sometimes a rush flag,
one to six `item`s (sku, quantity, a line of text with an entity) and
sometimes a note. A seeded generator makes it, so one size is one document
byte for byte on every machine.

The stylesheet does the kinds of work an XSLT processor spends its heap
on: keys over the whole document, Muenchian
grouping (each region's orders by customer, customers by district), sorts
on several keys, strings built with concat/translate/substring and
format-number, a recursive named template (an order's total, item by item,
each price a key lookup) and a mode that walks every node of a sample of
orders. Its output is text, about a third of the document's size.

Xalan-C puts a multi-step path's result in document order by insertion,
so `orders/order/items/item` over a whole document runs in quadratic time
(4.3 s at 20000 orders against 0.2 s to parse): every path here stays
within one order, one key's group or a table, and the run grows with the
document (measured in docs/bench.md). A key's group costs in proportion
to its size at every call too (regions grouped with key('region') were
quadratic: each is a sixth of the orders), so the regions are a table and
the districts grow with the customers.
"""

import random
from xml.sax.saxutils import escape, quoteattr

from corral.bench import seeded

REGIONS = (("north", "Northern coast"), ("south", "Southern plain"), ("east", "Eastern hills"),
           ("west", "Western valleys"), ("centre", "Central cities"), ("islands", "The islands"))
CITIES = ("Aberdeen", "Bergen", "Cork", "Dresden", "Evora", "Florence", "Ghent", "Hamburg",
          "Innsbruck", "Jena", "Krakow", "Lyon", "Malaga", "Nantes", "Oslo", "Porto")
TIERS = ("bronze", "silver", "gold")
SYLLABLES = ("an", "bel", "cor", "dan", "el", "fin", "gar", "hal", "is", "jor", "ka", "lin",
             "mor", "nev", "os", "per", "quin", "ros", "sil", "tor", "ul", "var", "wen", "yst")
WORDS = ("red", "large", "steel", "oak", "round", "spare", "boxed", "plain", "fine", "heavy",
         "blue", "small", "glass", "woven", "double", "light", "brass", "green", "thin", "tall")
ORDERS_PER_CUSTOMER = 8
ORDERS_PER_PRODUCT = 20
CUSTOMERS_PER_DISTRICT = 12


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))).capitalize()


def _words(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def orders_xml(orders: int) -> str:
    """The document with `orders` orders, its tables in proportion."""
    rng = seeded.rng(orders)
    customers = max(1, orders // ORDERS_PER_CUSTOMER)
    products = max(20, orders // ORDERS_PER_PRODUCT)
    districts = max(1, customers // (CUSTOMERS_PER_DISTRICT * len(CITIES)))
    out = ['<?xml version="1.0" encoding="UTF-8"?>\n', f'<shop year="2025" orders="{orders}">\n',
           "<regions>\n", *(f'<region code="{code}">{name}</region>\n' for code, name in REGIONS),
           "</regions>\n<catalogue>\n"]
    for p in range(products):
        out.append(f'<product sku="s{p:05d}" price="{rng.randint(1, 9999) / 100:.2f}">'
                   f"<title>{_words(rng, 1, 3)}</title></product>\n")
    out.append("</catalogue>\n<customers>\n")
    for c in range(customers):
        out.append(f'<customer id="c{c:06d}" tier="{rng.choice(TIERS)}">'
                   f"<name>{_name(rng)} {_name(rng)}</name>"
                   f"<city>{rng.choice(CITIES)} {rng.randint(1, districts)}</city></customer>\n")
    out.append("</customers>\n<orders>\n")
    for o in range(orders):
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        rush = ' rush="yes"' if rng.random() < 0.1 else ""
        out.append(f'<order id="o{o:07d}" customer="c{rng.randrange(customers):06d}" '
                   f'date="2025-{month:02d}-{day:02d}" region="{rng.choice(REGIONS)[0]}"{rush}>\n'
                   "<items>\n")
        for _ in range(rng.randint(1, 6)):
            out.append(f'<item sku="s{rng.randrange(products):05d}" qty="{rng.randint(1, 9)}">'
                       f"{escape(_words(rng, 2, 6))} &amp; co</item>\n")
        out.append("</items>\n")
        if rng.random() < 0.3:
            out.append(f"<note author={quoteattr(_name(rng))}>deliver {rng.choice(WORDS)} "
                       f"&lt;before {rng.randint(8, 18)}h&gt;</note>\n")
        out.append("</order>\n")
    out.append("</orders>\n</shop>\n")
    return "".join(out)


STYLESHEET = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- corral's xalan workload: a report over orders-N.xml (corral/bench/suite_xml.py). -->
<xsl:stylesheet version="1.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">
<xsl:output method="text" encoding="UTF-8"/>
<xsl:strip-space elements="*"/>

<xsl:key name="customer" match="customer" use="@id"/>
<xsl:key name="product" match="product" use="@sku"/>
<xsl:key name="orders-of" match="order" use="@customer"/>
<xsl:key name="region" match="order" use="@region"/>
<xsl:key name="sold" match="item" use="@sku"/>
<xsl:key name="district" match="customer" use="city"/>

<xsl:variable name="lower" select="'abcdefghijklmnopqrstuvwxyz'"/>
<xsl:variable name="upper" select="'ABCDEFGHIJKLMNOPQRSTUVWXYZ'"/>

<xsl:template match="/shop">
  <xsl:value-of select="concat('report for ', @year, ', ', @orders, ' orders&#10;')"/>
  <xsl:apply-templates select="regions"/>
  <xsl:apply-templates select="customers"/>
  <xsl:apply-templates select="catalogue"/>
  <xsl:apply-templates select="orders/order">
    <xsl:sort select="@date"/>
    <xsl:sort select="@id" order="descending"/>
  </xsl:apply-templates>
  <xsl:apply-templates select="orders/order[position() mod 16 = 1]" mode="outline"/>
</xsl:template>

<!-- Regions: each one's orders by key, then its five busiest customers
     (its orders grouped by customer, Muenchian). -->
<xsl:template match="regions">
  <xsl:for-each select="region">
    <xsl:sort select="."/>
    <xsl:variable name="code" select="@code"/>
    <xsl:variable name="here" select="key('region', $code)"/>
    <xsl:value-of select="concat('region ', translate(., $lower, $upper), ': ',
                                 count($here), ' orders, ', count($here[@rush]), ' rush&#10;')"/>
    <xsl:for-each select="$here[generate-id() = generate-id(key('orders-of', @customer)
                                  [@region = $code][1])]">
      <xsl:sort select="count(key('orders-of', @customer)[@region = $code])" data-type="number"
                order="descending"/>
      <xsl:sort select="@customer"/>
      <xsl:if test="position() &lt;= 5">
        <xsl:value-of select="concat('  ', key('customer', @customer)/name, ' (',
                                     count(key('orders-of', @customer)[@region = $code]), ')&#10;')"/>
      </xsl:if>
    </xsl:for-each>
  </xsl:for-each>
</xsl:template>

<!-- Districts: customers grouped by city district (Muenchian), tiers counted. -->
<xsl:template match="customers">
  <xsl:for-each select="customer[generate-id() = generate-id(key('district', city)[1])]">
    <xsl:sort select="substring-before(city, ' ')"/>
    <xsl:sort select="substring-after(city, ' ')" data-type="number"/>
    <xsl:variable name="here" select="key('district', city)"/>
    <xsl:value-of select="concat('district ', city, ': ', count($here), ' customers, gold ',
                                 count($here[@tier = 'gold']), ', first ',
                                 substring-before($here[1]/name, ' '), '&#10;')"/>
  </xsl:for-each>
</xsl:template>

<!-- Catalogue: units sold of every product, the fifty best sellers. -->
<xsl:template match="catalogue">
  <xsl:for-each select="product">
    <xsl:sort select="sum(key('sold', @sku)/@qty)" data-type="number" order="descending"/>
    <xsl:sort select="@sku"/>
    <xsl:if test="position() &lt;= 50">
      <xsl:value-of select="concat('sku ', @sku, ' ', title, ' x', sum(key('sold', @sku)/@qty),
                                   '&#10;')"/>
    </xsl:if>
  </xsl:for-each>
</xsl:template>

<!-- One line per order: its customer, its items by price as one string, its total. -->
<xsl:template match="order">
  <xsl:variable name="who" select="key('customer', @customer)"/>
  <xsl:variable name="total">
    <xsl:call-template name="total">
      <xsl:with-param name="items" select="items/item"/>
    </xsl:call-template>
  </xsl:variable>
  <xsl:value-of select="concat(@date, ' ', @id, ' ', translate($who/name, $lower, $upper),
                               ' [', $who/city, '/', substring($who/@tier, 1, 1), '] ')"/>
  <xsl:for-each select="items/item">
    <xsl:sort select="key('product', @sku)/@price" data-type="number"/>
    <xsl:sort select="@sku"/>
    <xsl:value-of select="concat(@sku, '*', @qty, substring(',', 1, last() - position()))"/>
  </xsl:for-each>
  <xsl:value-of select="concat(' = ', format-number($total, '#,##0.00'))"/>
  <xsl:if test="note">
    <xsl:value-of select="concat(' (', normalize-space(note), ')')"/>
  </xsl:if>
  <xsl:text>&#10;</xsl:text>
</xsl:template>

<xsl:template name="total">
  <xsl:param name="items"/>
  <xsl:param name="sum" select="0"/>
  <xsl:choose>
    <xsl:when test="$items">
      <xsl:call-template name="total">
        <xsl:with-param name="items" select="$items[position() &gt; 1]"/>
        <xsl:with-param name="sum"
                        select="$sum + $items[1]/@qty * key('product', $items[1]/@sku)/@price"/>
      </xsl:call-template>
    </xsl:when>
    <xsl:otherwise><xsl:value-of select="$sum"/></xsl:otherwise>
  </xsl:choose>
</xsl:template>

<!-- Outline: every element, attribute and text of an order, by depth. -->
<xsl:template match="*" mode="outline">
  <xsl:param name="indent" select="''"/>
  <xsl:value-of select="concat($indent, name())"/>
  <xsl:for-each select="@*">
    <xsl:value-of select="concat(' ', name(), '=', string-length(.))"/>
  </xsl:for-each>
  <xsl:text>&#10;</xsl:text>
  <xsl:apply-templates select="*|text()" mode="outline">
    <xsl:with-param name="indent" select="concat($indent, '  ')"/>
  </xsl:apply-templates>
</xsl:template>

<xsl:template match="text()" mode="outline">
  <xsl:param name="indent"/>
  <xsl:value-of select="concat($indent, '#', string-length(.), ' ',
                               translate(substring(., 1, 12), $lower, $upper), '&#10;')"/>
</xsl:template>

</xsl:stylesheet>
"""
