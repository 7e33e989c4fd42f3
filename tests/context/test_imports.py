"""Import statements become graph edges, in every indexed language."""

from __future__ import annotations

import pytest

from bot.context.provider import RepoContext
from tests.support.repos import make_repo

POLYGLOT = {
    "py/pkg/__init__.py": "",
    "py/pkg/models.py": "class Order:\n    pass\n",
    "py/pkg/views.py": "from .models import Order\n\n\ndef show():\n    return Order\n",
    "py/pkg/api.py": "from pkg import views\n\n\ndef handler():\n    return views\n",
    "web/src/format.ts": "export function money(v: number): string { return v.toFixed(2) }\n",
    "web/src/cart/total.ts": "import { money } from '../format';\nexport const total = () => money(1);\n",
    "web/src/index.js": "const cart = require('./cart/total');\nmodule.exports = cart;\n",
    "svc/go.mod": "module example.com/svc\n",
    "svc/store/store.go": "package store\n\nfunc Get() int { return 1 }\n",
    "svc/main.go": 'package main\n\nimport "example.com/svc/store"\n\nfunc main() { store.Get() }\n',
    "rs/src/lib.rs": "mod lexer;\nuse crate::lexer::Lexer;\n\npub fn run() -> Lexer { Lexer::new() }\n",
    "rs/src/lexer.rs": "pub struct Lexer;\nimpl Lexer { pub fn new() -> Self { Lexer } }\n",
    "java/src/com/shop/Cart.java": "package com.shop;\nimport com.shop.pricing.Discount;\npublic class Cart { double t() { return Discount.rate(); } }\n",
    "java/src/com/shop/pricing/Discount.java": "package com.shop.pricing;\npublic class Discount { static double rate() { return 0.1; } }\n",
}


@pytest.fixture(scope="module")
def polyglot(tmp_path_factory: pytest.TempPathFactory) -> RepoContext:
    base = tmp_path_factory.mktemp("polyglot")
    return RepoContext(make_repo(base / "repo", POLYGLOT), base / "cache")


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("py/pkg/views.py", "py/pkg/models.py"),  # relative import
        ("py/pkg/api.py", "py/pkg/views.py"),  # `from pkg import views` names a module
        ("web/src/cart/total.ts", "web/src/format.ts"),  # ../ with the extension left out
        ("web/src/index.js", "web/src/cart/total.ts"),  # require()
        ("svc/main.go", "svc/store/store.go"),  # a Go import names the package's folder
        ("rs/src/lib.rs", "rs/src/lexer.rs"),  # mod and use crate::
        ("java/src/com/shop/Cart.java", "java/src/com/shop/pricing/Discount.java"),
    ],
)
def test_an_import_links_the_importing_file_to_the_imported_one(
    polyglot: RepoContext, source: str, target: str
) -> None:
    index = polyglot.index
    importer, imported = index.files.ids[source], index.files.ids[target]
    assert imported in index.imports.out.get(importer)
    assert importer in index.neighbours(imported)  # and the link is walked both ways


def test_imports_of_modules_outside_the_repository_link_nothing(polyglot: RepoContext) -> None:
    index = polyglot.index
    main = index.files.ids["svc/main.go"]
    assert set(index.imports.out.get(main)) == {index.files.ids["svc/store/store.go"]}
