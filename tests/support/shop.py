"""A small shop repository (Python, several modules, tests) for the context tests, and a parser that counts.

Its fixtures (`shop_repo`, `shop_context`, `counting_parser`) are registered for every test by tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.context.indexer import Sources, parse_many
from bot.context.provider import RepoContext
from bot.context.tags import FileTags
from tests.support.repos import make_repo


class CountingParser:
    """The real parser, counting how many files it was asked to parse."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, items: Sources) -> Iterator[FileTags]:
        self.count += len(items)
        return parse_many(items)


SHOP = {
    "shop/__init__.py": "",
    "shop/cart.py": (
        "from shop.pricing import apply_discount\n\n\n"
        "class Cart:\n"
        '    """A shopping cart holding line items."""\n\n'
        "    def __init__(self):\n"
        "        self.items = []\n\n"
        "    def add_item(self, sku, quantity):\n"
        "        self.items.append((sku, quantity))\n\n"
        "    def total(self, prices):\n"
        "        subtotal = sum(prices[sku] * quantity for sku, quantity in self.items)\n"
        "        return apply_discount(subtotal, len(self.items))\n"
    ),
    "shop/pricing.py": (
        '"""Discount rules for carts."""\n\n\n'
        "def apply_discount(subtotal, count):\n"
        "    if count > 10:\n"
        "        return subtotal / (count - 10)\n"
        "    return subtotal\n"
    ),
    "shop/shipping.py": (
        "def shipping_cost(weight_kg, country):\n"
        "    rates = {'DE': 4.5, 'FR': 5.0}\n"
        "    return rates.get(country, 9.0) * max(weight_kg, 1)\n"
    ),
    "shop/emails.py": (
        "def render_receipt(order_id, lines):\n"
        "    body = '\\n'.join(lines)\n"
        "    return f'Receipt {order_id}\\n{body}'\n"
    ),
    "web/app.js": (
        "import { formatPrice } from './format';\n"
        "export function showTotal(cart) {\n"
        "  return formatPrice(cart.total());\n"
        "}\n"
    ),
    "web/format.js": "export function formatPrice(value) {\n  return value.toFixed(2);\n}\n",
    "tests/test_cart.py": (
        "from shop.cart import Cart\n\n\n"
        "def test_total():\n"
        "    cart = Cart()\n"
        "    cart.add_item('a', 2)\n"
        "    assert cart.total({'a': 3}) == 6\n"
    ),
}


@pytest.fixture
def counting_parser() -> CountingParser:
    return CountingParser()


@pytest.fixture
def shop_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "shop", SHOP)


@pytest.fixture(scope="module")
def shop_context(tmp_path_factory: pytest.TempPathFactory) -> RepoContext:
    """One indexed shop repository shared by property tests (they only read it)."""
    base = tmp_path_factory.mktemp("shared")
    return RepoContext(make_repo(base / "shop", SHOP), base / "cache")
