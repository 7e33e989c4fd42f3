"""Tag extraction per language: Python read from its tokens, the others with the queries in bot/context/queries."""

from __future__ import annotations

import pytest

from bot.context.extract import extract_tags
from bot.context.languages import grammar_for

SAMPLES = {
    "python": (
        "pkg/mod.py",
        (
            "import os\nfrom .util import helper\nfrom a.b import c as d\n\nLIMIT = 3\n\n"
            "class Parser(Base):\n    '''Parses tokens.'''\n\n    @property\n    def size(self):\n        return helper(LIMIT)\n\n"
            "def parse_file(path):\n    return Parser().size\n"
        ),
        {("Parser", "class"), ("size", "function"), ("parse_file", "function"), ("LIMIT", "constant")},
        {"os", ".util", ".util.helper", "a.b.c"},
        {"helper", "Base"},
    ),
    "javascript": (
        "src/app.js",
        (
            "import { render } from './view';\nconst fs = require('fs');\n"
            "class Widget extends Base {\n  draw() { return render(this.size); }\n}\n"
            "function makeWidget() { return new Widget(); }\nconst build = () => makeWidget();\n"
        ),
        {("Widget", "class"), ("draw", "method"), ("makeWidget", "function"), ("build", "function")},
        {"./view", "fs"},
        {"render", "Base", "size"},
    ),
    "typescript": (
        "src/model.ts",
        (
            "import { Store } from '../store';\n"
            "export interface Shape { area(): number }\n"
            "export type Id = string;\n"
            "enum Color { Red }\n"
            "export class Circle implements Shape {\n  area(): number { return Math.PI * this.radius; }\n}\n"
            "export function load(store: Store): Circle { return store.get(); }\n"
        ),
        {
            ("Shape", "interface"),
            ("Id", "type"),
            ("Color", "enum"),
            ("Circle", "class"),
            ("area", "method"),
            ("load", "function"),
        },
        {"../store"},
        {"Store", "radius", "PI"},
    ),
    "go": (
        "server/handler.go",
        (
            'package server\n\nimport (\n\t"fmt"\n\t"example.com/app/store"\n)\n\n'
            "const MaxUsers = 10\n\ntype Handler struct{ db store.DB }\n\n"
            'func (h *Handler) Serve(name string) string { return fmt.Sprintf("%s", h.db.Lookup(name)) }\n\n'
            "func NewHandler() *Handler { return &Handler{} }\n"
        ),
        {("Handler", "type"), ("Serve", "method"), ("NewHandler", "function"), ("MaxUsers", "constant")},
        {"fmt", "example.com/app/store"},
        {"Lookup", "Sprintf", "DB"},
    ),
    "rust": (
        "src/lib.rs",
        (
            "mod parser;\nuse crate::parser::Token;\n\n"
            "pub struct Lexer { pos: usize }\n\npub enum Kind { Word }\n\npub trait Scan { fn scan(&self) -> Token; }\n\n"
            "impl Scan for Lexer {\n    fn scan(&self) -> Token { Token::new(self.pos) }\n}\n\n"
            "macro_rules! tok { () => {} }\n"
        ),
        {
            ("Lexer", "class"),
            ("Kind", "enum"),
            ("Scan", "interface"),
            ("scan", "function"),
            ("parser", "module"),
            ("tok", "macro"),
        },
        {"parser", "crate::parser::Token"},
        {"Token", "pos", "new"},
    ),
    "java": (
        "src/main/java/com/shop/Cart.java",
        (
            "package com.shop;\n\nimport com.shop.pricing.Discount;\nimport java.util.List;\n\n"
            "public class Cart {\n  private List<Item> items;\n  public Cart() {}\n"
            "  public double total() { return Discount.apply(items.size()); }\n}\n"
            "interface Priced { double price(); }\n"
        ),
        {("Cart", "class"), ("total", "method"), ("Priced", "interface"), ("price", "method")},
        {"com.shop.pricing.Discount", "java.util.List"},
        {"Discount", "Item", "apply"},
    ),
}


@pytest.mark.parametrize("language", sorted(SAMPLES))
def test_definitions_imports_and_references(language: str) -> None:
    path, source, definitions, imports, references = SAMPLES[language]
    grammar = grammar_for(path)
    assert grammar is not None
    tags = extract_tags(source.encode(), grammar)
    assert definitions <= {(d.name, d.kind) for d in tags.definitions}
    assert imports <= set(tags.imports)
    assert references <= set(tags.references)


def test_line_ranges_cover_the_definition_and_its_decorators() -> None:
    tags = extract_tags(b"x = 1\n\n@cache\ndef slow(n):\n    return n\n", "python")
    (slow,) = [d for d in tags.definitions if d.name == "slow"]
    assert (slow.start_line, slow.end_line) == (3, 5)


def test_terms_split_identifiers_and_read_docstrings() -> None:
    tags = extract_tags(b'def fetchUserName():\n    """Look up the customer record."""\n', "python")
    assert {"fetchusername", "fetch", "user", "name", "customer", "record"} <= set(tags.terms)
    assert "the" not in tags.terms


def test_string_literals_are_searchable_so_a_quoted_error_message_finds_its_file() -> None:
    tags = extract_tags(
        b"def check(table):\n    raise Error(\"db_table '%s' is used by several models\", id='models.E028')\n", "python"
    )
    assert {"db_table", "e028", "several", "model"} <= set(tags.terms)
    # Words inside strings are terms, not references: they link no file to another.
    assert "several" not in tags.references


def test_unknown_and_extensionless_files_have_no_grammar() -> None:
    assert grammar_for("README.md") is None
    assert grammar_for("Makefile") is None
    assert grammar_for("dir.py/file") is None
    assert grammar_for("ui/App.TSX") == "tsx"


def test_words_of_module_paths_are_not_counted_as_uses() -> None:
    tags = extract_tags(b"import os.path\nfrom django.db import models\n\nclass A(models.Model):\n    pass\n", "python")
    assert "django" not in tags.references
    assert "db" not in tags.references
    assert tags.references["models"] == 2  # imported by name, then used
    assert {"django.db", "django.db.models", "os.path"} <= set(tags.imports)
