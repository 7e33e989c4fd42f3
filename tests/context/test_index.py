"""Indexing a real git repository: blob-id cache, incremental updates, persistence."""

from __future__ import annotations

import math
import multiprocessing
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.context.index import Index
from bot.context.indexer import PARALLEL_FROM, Sources, parse_many, sync
from bot.context.provider import RepoContext, repo_tag_cache
from bot.context.repo import RepoFiles, blob_id
from bot.context.store import TagStore, cache_version
from bot.context.tags import FileTags
from bot.errors import AiFixError
from tests.support.repos import git, huge_file, make_repo, peak_bytes, write
from tests.support.shop import SHOP, CountingParser

CODE_FILES = sum(1 for path in SHOP if path.endswith((".py", ".js")))


def test_first_index_parses_each_file_once_and_a_warm_start_parses_none(
    shop_repo: Path, tmp_path: Path, counting_parser: CountingParser
) -> None:
    cache = tmp_path / "cache"
    first = RepoContext(shop_repo, cache, parse=counting_parser)
    assert counting_parser.count == CODE_FILES
    assert first.refresh().parsed == 0
    first.close()

    again = CountingParser()
    warm = RepoContext(shop_repo, cache, parse=again)
    assert again.count == 0
    assert warm.last_sync.unchanged == CODE_FILES
    assert sorted(p for p in warm.index.files.paths if p) == sorted(p for p in SHOP if p.endswith((".py", ".js")))


def test_a_file_edited_or_deleted_while_indexing_is_indexed_as_the_parser_read_it(
    shop_repo: Path, tmp_path: Path
) -> None:
    pricing = shop_repo / "shop/pricing.py"

    def editing_parser(items: Sources) -> Iterator[FileTags]:
        # Lands after the listing read and hashed every file, before the parser reads them.
        pricing.write_text("def surge_price(base):\n    return base * 2\n")
        (shop_repo / "shop/emails.py").unlink()
        return parse_many(items)

    cache = tmp_path / "cache"
    context = RepoContext(shop_repo, cache, parse=editing_parser)
    files = context.index.files
    fid = files.ids["shop/pricing.py"]
    assert files.blobs[fid] == blob_id(pricing.read_bytes())
    assert [d.name for d in files.file_definitions(fid)] == ["surge_price"]
    assert "shop/emails.py" not in files.ids
    context.close()

    again = CountingParser()
    warm = RepoContext(shop_repo, cache, parse=again)
    assert again.count == 0  # the tags were stored under the blob they were read from
    assert [d.name for d in warm.index.files.file_definitions(warm.index.files.ids["shop/pricing.py"])] == [
        "surge_price"
    ]


def test_an_edit_reparses_only_that_file_and_a_revert_reuses_the_cached_blob(
    shop_repo: Path, tmp_path: Path, counting_parser: CountingParser
) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache", parse=counting_parser)
    original = (shop_repo / "shop/pricing.py").read_text()
    (shop_repo / "shop/pricing.py").write_text(original + "\n\ndef loyalty_bonus(points):\n    return points // 100\n")
    report = context.refresh()
    assert (report.parsed, counting_parser.count) == (1, CODE_FILES + 1)
    assert "loyalty_bonus" in {
        d.name for d in context.index.files.file_definitions(context.index.files.ids["shop/pricing.py"])
    }

    (shop_repo / "shop/pricing.py").write_text(original)
    report = context.refresh()
    assert (report.parsed, report.reused) == (0, 1)
    assert counting_parser.count == CODE_FILES + 1


def test_blob_ids_are_gits_even_for_uncommitted_files(shop_repo: Path, tmp_path: Path) -> None:
    write(shop_repo, {"shop/returns.py": "def refund(order):\n    return order\n"})
    context = RepoContext(shop_repo, tmp_path / "cache")
    for path in ("shop/returns.py", "shop/cart.py"):
        expected = git(shop_repo, "hash-object", path).strip()
        assert context.index.files.blobs[context.index.files.ids[path]] == expected


def test_deleted_and_ignored_files_leave_the_index(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    (shop_repo / "shop/emails.py").unlink()
    write(shop_repo, {".gitignore": "build/\n", "build/generated.py": "def generated():\n    pass\n"})
    report = context.refresh()
    assert report.removed == 1
    assert context.index.files.file_id("shop/emails.py") is None
    assert context.index.files.file_id("build/generated.py") is None
    assert "render_receipt" not in context.index.names.definers.live_keys()


def _graph(index: Index) -> dict[tuple[str, str], float]:
    edges = {}
    for fid in index.files.live():
        for other, weight in index.neighbours(fid).items():
            edges[str(index.files.paths[fid]), str(index.files.paths[other])] = weight
    return edges


def test_incremental_updates_give_the_same_index_as_a_rebuild(shop_repo: Path, tmp_path: Path) -> None:
    context = RepoContext(shop_repo, tmp_path / "cache")
    # A new file defining a name others use, an edit that drops a definition, a deletion.
    write(shop_repo, {"shop/discounts.py": "def apply_discount(subtotal, count):\n    return subtotal\n"})
    (shop_repo / "shop/pricing.py").write_text("def unrelated():\n    return 1\n")
    (shop_repo / "shop/shipping.py").unlink()
    context.refresh()

    rebuilt, _ = sync(Index(), RepoFiles(shop_repo), TagStore(tmp_path / "other" / "tags.sqlite", cache_version()))
    incremental = context.index
    assert sorted(p for p in incremental.files.paths if p) == sorted(p for p in rebuilt.files.paths if p)
    got, want = _graph(incremental), _graph(rebuilt)
    assert got.keys() == want.keys()
    assert all(math.isclose(got[k], want[k], rel_tol=1e-4) for k in want)
    assert ("shop/cart.py", "shop/discounts.py") in got
    assert ("shop/cart.py", "shop/pricing.py") in got  # still imported, no longer referenced by name
    query = {"apply": 1, "discount": 1, "shipping": 1}
    scores_inc = {incremental.files.paths[f]: s for f, s in incremental.bm25(query).items()}
    scores_new = {rebuilt.files.paths[f]: s for f, s in rebuilt.bm25(query).items()}
    assert scores_inc.keys() == scores_new.keys()
    assert all(math.isclose(scores_inc[k], scores_new[k], rel_tol=1e-9) for k in scores_new)


def test_snapshot_and_tag_cache_survive_a_restart_after_edits(shop_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    context = RepoContext(shop_repo, cache)
    (shop_repo / "shop/cart.py").write_text((shop_repo / "shop/cart.py").read_text() + "\nEXTRA = 1\n")
    context.refresh()
    context.close()
    parser = CountingParser()
    restarted = RepoContext(shop_repo, cache, parse=parser)
    assert parser.count == 0
    assert "EXTRA" in {
        d.name for d in restarted.index.files.file_definitions(restarted.index.files.ids["shop/cart.py"])
    }


def test_a_corrupt_snapshot_is_rebuilt_from_the_tag_cache(shop_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    RepoContext(shop_repo, cache).close()
    (cache / "index.marshal").write_bytes(b"not a snapshot")
    parser = CountingParser()
    context = RepoContext(shop_repo, cache, parse=parser)
    assert parser.count == 0
    assert context.index.files.live_count == CODE_FILES


def test_works_on_a_folder_that_is_not_a_git_repository(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    write(root, {"lib/a.py": "def alpha():\n    return beta()\n", "lib/b.py": "def beta():\n    return 2\n"})
    context = RepoContext(root, tmp_path / "cache")
    assert context.index.files.live_count == 2
    a, b = context.index.files.ids["lib/a.py"], context.index.files.ids["lib/b.py"]
    assert b in context.index.neighbours(a)


def test_the_default_cache_lives_inside_dot_git(shop_repo: Path) -> None:
    RepoContext(shop_repo).close()
    assert (shop_repo / ".git" / "ai-fix" / "context" / "index.marshal").is_file()
    assert git(shop_repo, "status", "--porcelain") == ""


def test_parallel_parsing_gives_the_same_tags(tmp_path: Path) -> None:
    files = {f"pkg/m{i}.py": f"def func{i}():\n    return func{(i + 1) % 250}()\n" for i in range(250)}
    root = make_repo(tmp_path / "many", files)
    context = RepoContext(root, tmp_path / "cache")
    assert context.index.files.live_count == 250
    m0, m1 = context.index.files.ids["pkg/m0.py"], context.index.files.ids["pkg/m1.py"]
    assert m1 in context.index.neighbours(m0)


def test_an_ignore_rule_edited_in_place_drops_the_file_and_new_folders_are_seen(tmp_path: Path) -> None:
    root = make_repo(tmp_path / "r", {".gitignore": "*.log\n", "app/core.py": "def run():\n    pass\n"})
    write(root, {"scratch/tmp.py": "def scratch():\n    pass\n"})
    context = RepoContext(root, tmp_path / "cache")
    assert context.index.files.file_id("scratch/tmp.py") is not None
    (root / ".gitignore").write_text("*.log\nscratch/\n")
    write(root, {"app/deep/new/module.py": "def fresh():\n    pass\n"})
    context.refresh()
    assert context.index.files.file_id("scratch/tmp.py") is None
    assert context.index.files.file_id("app/deep/new/module.py") is not None


def test_parsing_from_a_thread_gives_the_same_tags_as_from_the_main_thread() -> None:
    items = [(f"def func{i}():\n    return func{i + 1}()\n".encode(), "python") for i in range(PARALLEL_FROM)]
    here = list(parse_many(items))
    there: list = []
    worker = threading.Thread(target=lambda: there.extend(parse_many(items)))
    worker.start()
    worker.join(timeout=60)
    assert [t.to_tuple() for t in there] == [t.to_tuple() for t in here]
    assert here[7].definitions[0].name == "func7"


def test_a_damaged_tag_cache_is_started_again(shop_repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    RepoContext(shop_repo, cache).close()
    (cache / "tags.sqlite").write_bytes(b"this is not a database" * 100)
    (cache / "index.marshal").unlink()
    parser = CountingParser()
    context = RepoContext(shop_repo, cache, parse=parser)
    assert parser.count == CODE_FILES
    assert context.index.files.live_count == CODE_FILES


def test_an_unusable_cache_folder_is_a_clear_error(shop_repo: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(AiFixError, match="writable cache folder"):
        RepoContext(shop_repo, blocker / "cache")


def test_jobs_on_clones_of_one_repository_share_the_tag_cache(shop_repo: Path, tmp_path: Path) -> None:
    tags = repo_tag_cache(tmp_path / "work", "acme/shop")
    first_clone, second_clone = tmp_path / "job1" / "tree", tmp_path / "job2" / "tree"
    for clone in (first_clone, second_clone):
        git(tmp_path, "clone", "-q", str(shop_repo), str(clone))
    write(second_clone, {"shop/cart.py": "class Cart:\n    pass\n"})

    first_parser, second_parser = CountingParser(), CountingParser()
    first = RepoContext(first_clone, tmp_path / "job1" / "context", tag_cache=tags, parse=first_parser)
    # The first job is still open: the second reads the store while the first holds it.
    second = RepoContext(second_clone, tmp_path / "job2" / "context", tag_cache=tags, parse=second_parser)
    assert first_parser.count == CODE_FILES
    assert second_parser.count == 1  # only the edited file
    assert (second.last_sync.parsed, second.last_sync.reused) == (1, CODE_FILES - 1)
    assert second.index.files.file_definitions(second.index.files.ids["shop/cart.py"])[0].name == "Cart"
    first.close()
    second.close()
    assert repo_tag_cache(tmp_path / "work", "acme/other") != tags
    assert not (tmp_path / "job1" / "context" / "tags.sqlite").exists()


def _fill_store(path: str, start: int) -> None:
    store = TagStore(Path(path), "v")
    for batch in range(20):
        store.put_many((f"blob{start + batch * 10 + i}", FileTags()) for i in range(10))
    store.close()


def test_processes_writing_one_tag_store_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "tags.sqlite"
    TagStore(path, "v").close()
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_fill_store, args=(str(path), n * 1000)) for n in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    wanted = [f"blob{n * 1000 + k}" for n in range(3) for k in range(200)]
    assert len(TagStore(path, "v").get_many(wanted)) == 600


def test_a_huge_source_file_is_left_out_of_the_index_without_being_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    write(root, {"lib/a.py": "def alpha():\n    return 1\n"})
    huge_file(root / "lib" / "generated.py", "def huge():\n    return 2\n")
    context, peak = peak_bytes(lambda: RepoContext(root, tmp_path / "cache"))
    assert sorted(p for p in context.index.files.paths if p) == ["lib/a.py"]
    assert peak < 16 << 20, f"{peak} bytes held to index two files"
