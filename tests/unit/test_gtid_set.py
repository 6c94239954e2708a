"""Unit and property tests for ``airflow_mysql_cdc.engine.values.gtid``.

Every watermark, checkpoint and stop rule is a ``GtidSet``, and checkpoints compare the canonical
string. So these tests pin two things: that we read every text MySQL prints (including the MySQL
8.3+ tagged form) and reject everything else with an error naming the bad token, and that the set
algebra agrees with a brute-force model, a plain ``frozenset`` of ``(uuid, tag, number)`` triples.
The property tests feed the model through two routes, ``GtidSet.of`` and a deliberately ugly
rendering (shuffled, overlapping, mixed case, stray whitespace) that is parsed back.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable

import pymysqlreplication.gtid
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_mysql_cdc.engine.values.gtid import (
    MAX_TRANSACTION_NUMBER,
    Gtid,
    GtidSet,
    MalformedGtidSetError,
    TaggedGtidsUnsupportedError,
)

UUID_A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UUID_B = "8a94f5a2-5c37-11ee-b1b7-0242ac120002"
UUID_C = "d1c3f5e0-7b2a-11ee-9f3c-0242ac120003"
assert UUID_A < UUID_B < UUID_C, "tests below rely on this order for canonical output"

Triple = tuple[str, str, int]
"""``(uuid, tag, number)``: one GTID in the brute-force model; the tag is ``""`` when untagged."""


# --- 1. parsing every form MySQL prints ----------------------------------------------------------


def test_parse_reads_several_uuids_separated_by_comma_and_newline_as_in_gtid_executed() -> None:
    # @@gtid_executed puts ",\n" between UUIDs once there is more than one.
    text = f"{UUID_A}:1-5,\n{UUID_B}:1-3,\n{UUID_C}:7"

    parsed = GtidSet.parse(text)

    assert parsed.intervals_by_source == {
        (UUID_A, ""): ((1, 5),),
        (UUID_B, ""): ((1, 3),),
        (UUID_C, ""): ((7, 7),),
    }
    assert str(parsed) == f"{UUID_A}:1-5,{UUID_B}:1-3,{UUID_C}:7"


def test_parse_reads_single_numbers_and_ranges_within_one_uuid() -> None:
    parsed = GtidSet.parse(f"{UUID_A}:1-3:5:7-9:11")

    assert parsed.intervals_by_source == {(UUID_A, ""): ((1, 3), (5, 5), (7, 9), (11, 11))}
    assert parsed.count() == 3 + 1 + 3 + 1


@pytest.mark.parametrize("server_uuid", [UUID_A, UUID_A.upper(), "3E11fa47-71CA-11e1-9E33-c80aa9429562"])
def test_parse_accepts_any_uuid_case_and_prints_lower_case(server_uuid: str) -> None:
    parsed = GtidSet.parse(f"{server_uuid}:1-5")

    assert str(parsed) == f"{UUID_A}:1-5"
    assert parsed == GtidSet.parse(f"{UUID_A}:1-5")


@pytest.mark.parametrize("text", ["", None, " ", "\n", " \n\t "], ids=repr)
def test_parse_of_empty_string_none_or_whitespace_is_the_empty_set(text: str | None) -> None:
    # @@gtid_purged is "" on a fresh server; a NULL column read comes back as None.
    parsed = GtidSet.parse(text)

    assert parsed == GtidSet()
    assert parsed.is_empty()
    assert str(parsed) == ""


def test_parse_ignores_whitespace_around_the_text_and_around_commas() -> None:
    text = f"  \n{UUID_B}:2-3 ,\n   {UUID_A}:1\t,\n\n{UUID_C}:4  \n"

    assert str(GtidSet.parse(text)) == f"{UUID_A}:1,{UUID_B}:2-3,{UUID_C}:4"


def test_parse_merges_the_same_uuid_written_in_two_elements() -> None:
    # MySQL never prints this, but users paste sets together; it must mean the union.
    parsed = GtidSet.parse(f"{UUID_A}:1-3,{UUID_B}:1,{UUID_A.upper()}:4-6:10")

    assert str(parsed) == f"{UUID_A}:1-6:10,{UUID_B}:1"


def test_parse_rejects_a_non_string_with_type_error() -> None:
    with pytest.raises(TypeError, match="expects a string"):
        GtidSet.parse(b"3e11fa47-71ca-11e1-9e33-c80aa9429562:1")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "expected_sources", "canonical"),
    [
        pytest.param(
            f"{UUID_A}:tag:1-5",
            {(UUID_A, "tag"): ((1, 5),)},
            f"{UUID_A}:tag:1-5",
            id="one tag",
        ),
        pytest.param(
            f"{UUID_A}:1-3:tag_a:1-5:tag_b:7",
            {(UUID_A, ""): ((1, 3),), (UUID_A, "tag_a"): ((1, 5),), (UUID_A, "tag_b"): ((7, 7),)},
            f"{UUID_A}:1-3:tag_a:1-5:tag_b:7",
            id="untagged then two tags",
        ),
        pytest.param(
            f"{UUID_A}:TAG_B:7:Tag_A:1-2:4-5,{UUID_A}:1-3",
            {(UUID_A, ""): ((1, 3),), (UUID_A, "tag_a"): ((1, 2), (4, 5)), (UUID_A, "tag_b"): ((7, 7),)},
            f"{UUID_A}:1-3:tag_a:1-2:4-5:tag_b:7",
            id="tags case-insensitive and sorted, untagged first",
        ),
        pytest.param(
            f"{UUID_B}:_x9:3,\n{UUID_A}:t:1",
            {(UUID_A, "t"): ((1, 1),), (UUID_B, "_x9"): ((3, 3),)},
            f"{UUID_A}:t:1,{UUID_B}:_x9:3",
            id="tags on several uuids",
        ),
        pytest.param(
            f"{UUID_A}:{'a' * 32}:1",
            {(UUID_A, "a" * 32): ((1, 1),)},
            f"{UUID_A}:{'a' * 32}:1",
            id="32-character tag",
        ),
    ],
)
def test_tagged_gtid_sets_parse_and_round_trip(
    text: str, expected_sources: dict[tuple[str, str], tuple[tuple[int, int], ...]], canonical: str
) -> None:
    parsed = GtidSet.parse(text)

    assert parsed.intervals_by_source == expected_sources
    assert parsed.has_tags
    assert str(parsed) == canonical
    assert GtidSet.parse(str(parsed)) == parsed


def test_a_tag_applies_to_every_interval_after_it_until_the_next_tag() -> None:
    parsed = GtidSet.parse(f"{UUID_A}:1:t:2:3-4:u:5")

    assert Gtid(UUID_A, 1) in parsed
    assert Gtid(UUID_A, 2) not in parsed
    assert all(Gtid(UUID_A, n, "t") in parsed for n in (2, 3, 4))
    assert Gtid(UUID_A, 5, "u") in parsed
    assert Gtid(UUID_A, 5, "t") not in parsed


def test_tagged_and_untagged_gtids_with_the_same_number_are_different_transactions() -> None:
    parsed = GtidSet.parse(f"{UUID_A}:1-5:t:1-5")

    assert parsed.count() == 10
    assert parsed - GtidSet.parse(f"{UUID_A}:1-5") == GtidSet.parse(f"{UUID_A}:t:1-5")


# --- 2. the canonical string -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        pytest.param(f"{UUID_A}:1-3:4-5", f"{UUID_A}:1-5", id="adjacent ranges joined"),
        pytest.param(f"{UUID_A}:1:2:3", f"{UUID_A}:1-3", id="adjacent singles joined"),
        pytest.param(f"{UUID_A}:4-9:1-5", f"{UUID_A}:1-9", id="overlapping ranges merged"),
        pytest.param(f"{UUID_A}:7:1-3:5", f"{UUID_A}:1-3:5:7", id="intervals sorted"),
        pytest.param(f"{UUID_A}:2-2", f"{UUID_A}:2", id="one-number range printed as a number"),
        pytest.param(f"{UUID_A}:01-007", f"{UUID_A}:1-7", id="leading zeros dropped"),
        pytest.param(
            f"{UUID_C}:1,{UUID_A}:1,{UUID_B}:1", f"{UUID_A}:1,{UUID_B}:1,{UUID_C}:1", id="uuids sorted"
        ),
        pytest.param(f"{UUID_A}:1-10:3-4:5", f"{UUID_A}:1-10", id="contained intervals absorbed"),
    ],
)
def test_canonical_string_sorts_and_merges_intervals(text: str, canonical: str) -> None:
    assert str(GtidSet.parse(text)) == canonical


def test_equal_sets_written_differently_are_equal_print_equally_and_hash_equally() -> None:
    # Checkpoints compare the string; dict/set keys use the hash. Both must agree with ==.
    spellings = [
        f"{UUID_A}:1-5,{UUID_B}:1-3",
        f"{UUID_B.upper()}:1:2-3,\n{UUID_A}:1-3:4-5",
        f"  {UUID_A}:3-5 , {UUID_B}:1-3 ,{UUID_A}:1-2\n",
    ]
    parsed = [GtidSet.parse(text) for text in spellings]

    assert len({str(gtid_set) for gtid_set in parsed}) == 1
    assert len({hash(gtid_set) for gtid_set in parsed}) == 1
    assert all(gtid_set == parsed[0] for gtid_set in parsed)
    assert len(set(parsed)) == 1


def test_repr_shows_the_canonical_string() -> None:
    assert repr(GtidSet.parse(f"{UUID_A}:1-3:4")) == f"GtidSet('{UUID_A}:1-4')"


def test_a_gtid_set_is_not_equal_to_its_string() -> None:
    gtid_set = GtidSet.parse(f"{UUID_A}:1")

    assert gtid_set != str(gtid_set)


# --- 3. malformed input ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "token"),
    [
        pytest.param(f"{UUID_A[:-1]}:1", UUID_A[:-1], id="uuid one digit short"),
        pytest.param(f"{UUID_A[:-1]}g:1", f"{UUID_A[:-1]}g", id="uuid with non-hex digit"),
        pytest.param("not-a-uuid:1-5", "not-a-uuid", id="not a uuid at all"),
        pytest.param(f"{UUID_A}:1,bad:2", "bad", id="bad uuid in second element"),
        pytest.param(f"{UUID_A}:0", "0", id="zero"),
        pytest.param(f"{UUID_A}:0-5", "0-5", id="range starting at zero"),
        pytest.param(f"{UUID_A}:5-3", "5-3", id="reversed range"),
        pytest.param(UUID_A, UUID_A, id="uuid without interval"),
        pytest.param(f"{UUID_A}:1,{UUID_B}", UUID_B, id="second uuid without interval"),
        pytest.param(f"{UUID_A}:", "", id="colon without interval"),
        pytest.param(f"{UUID_A}:1::2", "", id="empty interval between colons"),
        pytest.param(f"{UUID_A}:1-5:tag", f"{UUID_A}:1-5:tag", id="trailing tag"),
        pytest.param(f"{UUID_A}:tag", f"{UUID_A}:tag", id="tag only"),
        pytest.param(f"{UUID_A}:tag_a:tag_b:1", "tag_b", id="double tag"),
        pytest.param(f"{UUID_A}:1,,{UUID_B}:1", "", id="empty element between commas"),
        pytest.param(f"{UUID_A}:1,", "", id="trailing comma"),
        pytest.param(f",{UUID_A}:1", "", id="leading comma"),
        pytest.param(f"{UUID_A}:1-x", "1-x", id="junk after range dash"),
        pytest.param(f"{UUID_A}:12abc", "12abc", id="junk after number"),
        pytest.param(f"{UUID_A}:1-2-3", "1-2-3", id="two dashes"),
        pytest.param(f"{UUID_A}:-1", "-1", id="negative number"),
        pytest.param(f"{UUID_A}:1.5", "1.5", id="decimal number"),
        pytest.param(f"{UUID_A}:t-1:2", "t-1", id="tag with dash"),
        pytest.param(f"{UUID_A}:{'a' * 33}:1", "a" * 33, id="tag longer than 32"),
        pytest.param(f"{UUID_A}:{2**63}", str(2**63), id="number above 2^63-1"),
        pytest.param(f"{UUID_A}:1-{2**63}", f"1-{2**63}", id="range end above 2^63-1"),
        pytest.param(f"{UUID_A}:1 2", "1 2", id="space inside interval"),
    ],
)
def test_malformed_gtid_set_raises_error_naming_the_bad_token(text: str, token: str) -> None:
    with pytest.raises(MalformedGtidSetError) as caught:
        GtidSet.parse(text)

    assert caught.value.token == token
    assert caught.value.text == text
    assert repr(token) in str(caught.value)
    assert isinstance(caught.value, ValueError), "callers catch ValueError for bad configuration"


@pytest.mark.parametrize(
    ("text", "token"),
    [
        pytest.param(f"{{{UUID_A}}}:1", f"{{{UUID_A}}}", id="braced uuid"),
        pytest.param(f"{UUID_A.replace('-', '')}:1", UUID_A.replace("-", ""), id="uuid without dashes"),
        # uuid.UUID accepted these and silently produced a different server's UUID.
        pytest.param(
            "3e11fa4771ca11e19e33c80aa94295_2:1", "3e11fa4771ca11e19e33c80aa94295_2", id="underscore"
        ),
        pytest.param("+3e11fa4771ca11e19e33c80aa942956:1", "+3e11fa4771ca11e19e33c80aa942956", id="plus"),
        pytest.param(
            "3e11-fa47-71ca11e19e33c80aa9429562:1", "3e11-fa47-71ca11e19e33c80aa9429562", id="dashes"
        ),
        # str.isdigit/int/\d accept non-ASCII digits; MySQL does not.
        pytest.param(f"{UUID_A}:\u0661-\u0665", "\u0661-\u0665", id="arabic-indic digits"),
        pytest.param(f"{UUID_A}:\uff11", "\uff11", id="fullwidth digit"),
        # "\u212a".lower() == "k": the Kelvin sign would have become the tag "k".
        pytest.param(f"{UUID_A}:\u212a:1", "\u212a", id="kelvin sign tag"),
        pytest.param(f"{UUID_A}:\u017f:1", "\u017f", id="long s tag"),
    ],
)
def test_parse_rejects_text_python_accepts_but_mysql_does_not(text: str, token: str) -> None:
    """Regression: the parser leaned on Python's Unicode-lenient ``uuid.UUID``, ``\\d`` and ``lower``."""
    with pytest.raises(MalformedGtidSetError) as caught:
        GtidSet.parse(text)

    assert caught.value.token == token
    assert repr(token) in str(caught.value)


def test_largest_transaction_number_2_pow_63_minus_1_is_accepted() -> None:
    parsed = GtidSet.parse(f"{UUID_A}:{MAX_TRANSACTION_NUMBER}")

    assert Gtid(UUID_A, MAX_TRANSACTION_NUMBER) in parsed
    assert str(parsed) == f"{UUID_A}:{MAX_TRANSACTION_NUMBER}"


def test_malformed_error_message_shortens_very_long_input() -> None:
    text = ",".join(f"{UUID_A}:{n}" for n in range(1, 100)) + ",junk"

    with pytest.raises(MalformedGtidSetError) as caught:
        GtidSet.parse(text)

    assert caught.value.token == "junk"
    assert len(str(caught.value)) < 300
    assert caught.value.text == text, "the full text stays available for logging"


# --- 4. the set algebra on examples --------------------------------------------------------------


def s(text: str) -> GtidSet:
    """Short constructor so example tables read like the strings MySQL prints."""
    return GtidSet.parse(text)


def test_union_joins_intervals_across_uuids_and_tags() -> None:
    left = s(f"{UUID_A}:1-3,{UUID_B}:5")
    right = s(f"{UUID_A}:4-6:t:1,{UUID_C}:1")

    assert left | right == s(f"{UUID_A}:1-6:t:1,{UUID_B}:5,{UUID_C}:1")
    assert left.union(right) == right.union(left)


def test_intersection_keeps_only_common_transactions() -> None:
    left = s(f"{UUID_A}:1-10:t:1-5,{UUID_B}:1-3")
    right = s(f"{UUID_A}:5-20:t:4-9,{UUID_C}:1-3")

    assert left & right == s(f"{UUID_A}:5-10:t:4-5")
    assert left.intersection(right) == right & left


def test_difference_splits_intervals_around_the_removed_transactions() -> None:
    # H - L: the snapshot window's transactions between the low and high watermark.
    high_watermark = s(f"{UUID_A}:1-20,{UUID_B}:1-5")
    low_watermark = s(f"{UUID_A}:1-4:8:12-13,{UUID_B}:1-5")

    assert high_watermark - low_watermark == s(f"{UUID_A}:5-7:9-11:14-20")
    assert low_watermark.difference(high_watermark).is_empty()


def test_difference_by_a_disjoint_or_empty_set_changes_nothing() -> None:
    gtid_set = s(f"{UUID_A}:1-5")

    assert gtid_set - s(f"{UUID_B}:1-5") == gtid_set
    assert gtid_set - s(f"{UUID_A}:t:1-5") == gtid_set
    assert gtid_set - GtidSet() == gtid_set


def test_issubset_and_issuperset_compare_by_transactions() -> None:
    small = s(f"{UUID_A}:2-3")
    large = s(f"{UUID_A}:1-5,{UUID_B}:1")

    assert small <= large and small.issubset(large)
    assert large >= small and large.issuperset(small)
    assert not large <= small
    assert not small.issuperset(large)
    assert small <= small
    assert GtidSet() <= small
    assert not s(f"{UUID_A}:t:2") <= large, "a tagged GTID is not covered by the untagged one"


@pytest.mark.parametrize(
    ("gtid", "expected"),
    [
        pytest.param(Gtid(UUID_A, 3), True, id="untagged object inside"),
        pytest.param(Gtid(UUID_A, 6), False, id="untagged object in gap"),
        pytest.param(f"{UUID_A}:7", True, id="untagged string inside"),
        pytest.param(f"{UUID_A.upper()}:7", True, id="upper-case string inside"),
        pytest.param(f"{UUID_B}:1", False, id="unknown uuid"),
        pytest.param(Gtid(UUID_A, 2, "t"), True, id="tagged object inside"),
        pytest.param(f"{UUID_A}:T:2", True, id="tagged string, tag in other case"),
        pytest.param(f"{UUID_A}:t:3", False, id="tagged string outside"),
        pytest.param(f"{UUID_A}:u:2", False, id="other tag"),
    ],
)
def test_membership_of_one_gtid_as_object_or_string(gtid: Gtid | str, expected: bool) -> None:
    gtid_set = s(f"{UUID_A}:1-5:7:t:1-2")

    assert (gtid in gtid_set) is expected


def test_membership_of_a_multi_gtid_string_is_rejected() -> None:
    with pytest.raises(MalformedGtidSetError, match="expected exactly one GTID"):
        _ = f"{UUID_A}:1-2" in s(f"{UUID_A}:1-5")


def test_max_per_uuid_takes_the_highest_number_over_all_tags() -> None:
    gtid_set = s(f"{UUID_A}:1-5:a:1-9:b:3,{UUID_B}:2:4-6")

    assert gtid_set.max_per_uuid() == {UUID_A: 9, UUID_B: 6}
    assert GtidSet().max_per_uuid() == {}


def test_count_sums_transactions_and_is_exact_beyond_sys_maxsize() -> None:
    assert s(f"{UUID_A}:1-5:7,{UUID_B}:t:10-19").count() == 16
    assert GtidSet().count() == 0

    huge = s(f"{UUID_A}:1-{MAX_TRANSACTION_NUMBER},{UUID_B}:1-{MAX_TRANSACTION_NUMBER}")
    assert huge.count() == 2 * MAX_TRANSACTION_NUMBER
    assert huge.count() > sys.maxsize


def test_is_empty_and_bool_agree() -> None:
    assert GtidSet().is_empty() and not GtidSet()
    assert not s(f"{UUID_A}:1").is_empty() and s(f"{UUID_A}:1")
    assert (s(f"{UUID_A}:1-3") - s(f"{UUID_A}:1-3")).is_empty()


def test_add_returns_a_new_set_and_leaves_the_original_unchanged() -> None:
    original = s(f"{UUID_A}:1-3")

    extended = original.add(Gtid(UUID_A, 4)).add(f"{UUID_B}:t:1")

    assert extended == s(f"{UUID_A}:1-4,{UUID_B}:t:1")
    assert original == s(f"{UUID_A}:1-3")
    assert original.add(f"{UUID_A}:2") == original


def test_of_builds_a_set_from_gtid_objects_and_strings() -> None:
    built = GtidSet.of([Gtid(UUID_B, 2), f"{UUID_A}:3", Gtid(UUID_A, 1), f"{UUID_A}:2", f"{UUID_A}:x:9"])

    assert str(built) == f"{UUID_A}:1-3:x:9,{UUID_B}:2"
    assert GtidSet.of([]) == GtidSet()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(f"{UUID_A}:7", Gtid(UUID_A, 7), id="untagged"),
        pytest.param(f"{UUID_A}:tag:7", Gtid(UUID_A, 7, "tag"), id="tagged"),
        pytest.param(f" {UUID_A.upper()}:TAG:7-7 ", Gtid(UUID_A, 7, "tag"), id="non-canonical spelling"),
    ],
)
def test_gtid_parse_and_str_round_trip(text: str, expected: Gtid) -> None:
    parsed = Gtid.parse(text)

    assert parsed == expected
    assert Gtid.parse(str(parsed)) == parsed
    assert str(parsed) == str(expected)


@pytest.mark.parametrize("text", [f"{UUID_A}:1-2", f"{UUID_A}:1,{UUID_B}:1", "", f"{UUID_A}:0"])
def test_gtid_parse_rejects_anything_but_exactly_one_transaction(text: str) -> None:
    with pytest.raises(MalformedGtidSetError):
        Gtid.parse(text)


def test_gtid_built_directly_is_normalised_like_a_parsed_one() -> None:
    """Regression: ``GtidSet.of([Gtid(UPPER_UUID, 1)])`` printed upper case and differed from the parse."""
    built = Gtid(UUID_A.upper(), 1, "TaG")

    assert built == Gtid.parse(f"{UUID_A}:tag:1")
    assert str(GtidSet.of([built])) == f"{UUID_A}:tag:1"
    assert built in s(f"{UUID_A}:tag:1")


@pytest.mark.parametrize(
    ("uuid", "number", "tag"),
    [
        pytest.param("not-a-uuid", 1, "", id="bad uuid"),
        pytest.param(UUID_A, 0, "", id="zero"),
        pytest.param(UUID_A, MAX_TRANSACTION_NUMBER + 1, "", id="too large"),
        pytest.param(UUID_A, 1, "bad-tag", id="bad tag"),
    ],
)
def test_gtid_built_directly_with_invalid_parts_is_rejected(uuid: str, number: int, tag: str) -> None:
    # Otherwise GtidSet.of would accept it and print a string GtidSet.parse refuses.
    with pytest.raises(MalformedGtidSetError):
        Gtid(uuid, number, tag)


def test_iteration_yields_every_gtid_in_canonical_order() -> None:
    gtid_set = s(f"{UUID_B}:2,{UUID_A}:t:1,{UUID_A}:3-4")

    assert list(gtid_set) == [Gtid(UUID_A, 3), Gtid(UUID_A, 4), Gtid(UUID_A, 1, "t"), Gtid(UUID_B, 2)]
    assert list(GtidSet()) == []


@pytest.mark.parametrize("operation", ["union", "intersection", "difference", "issubset", "issuperset"])
def test_algebra_with_a_non_gtid_set_raises_type_error(operation: str) -> None:
    """Regression: the named methods returned ``NotImplemented`` (truthy) for a string argument."""
    with pytest.raises(TypeError, match="expected a GtidSet"):
        getattr(s(f"{UUID_A}:1"), operation)(f"{UUID_A}:1")


def test_operators_with_a_non_gtid_set_raise_type_error() -> None:
    gtid_set = s(f"{UUID_A}:1")

    for operate in (
        lambda: gtid_set | "x",
        lambda: gtid_set & "x",
        lambda: gtid_set - "x",
        lambda: gtid_set <= 1,
        lambda: gtid_set >= 1,
    ):
        with pytest.raises(TypeError):
            operate()


# --- 5. hand-over to mysql-replication -------------------------------------------------------------


def test_to_replication_position_is_the_canonical_string_for_untagged_sets() -> None:
    gtid_set = s(f"{UUID_B}:1-3,\n{UUID_A}:4-5:1-3")

    assert gtid_set.to_replication_position() == f"{UUID_A}:1-5,{UUID_B}:1-3"
    assert GtidSet().to_replication_position() == ""


@pytest.mark.parametrize("text", [f"{UUID_A}:t:1", f"{UUID_A}:1-5,{UUID_B}:1:tag_b:2"])
def test_to_replication_position_refuses_tagged_sets_and_names_the_tags(text: str) -> None:
    with pytest.raises(TaggedGtidsUnsupportedError) as caught:
        s(text).to_replication_position()

    uuid, tag = next(source for source in s(text).intervals_by_source if source[1])
    assert f"{uuid}:{tag}" in str(caught.value)


def test_mysql_replication_cannot_parse_tagged_text_which_is_why_we_refuse_it() -> None:
    with pytest.raises(ValueError):
        pymysqlreplication.gtid.GtidSet(f"{UUID_A}:t:1-5")


@pytest.mark.parametrize(
    "text",
    [
        f"{UUID_A}:1",
        f"{UUID_A}:1-5",
        f"{UUID_B}:1-3:5:7-9,\n{UUID_A.upper()}:4-5:1-3,{UUID_C}:{MAX_TRANSACTION_NUMBER}",
    ],
)
def test_mysql_replication_parses_our_position_to_the_same_set(text: str) -> None:
    position = s(text).to_replication_position()

    theirs = pymysqlreplication.gtid.GtidSet(position)

    assert GtidSet.parse(str(theirs)) == s(text)


# --- 6. properties against a brute-force model -------------------------------------------------------

UNIVERSE_UUIDS = (UUID_A, UUID_B, UUID_C)
UNIVERSE_TAGS = ("", "t1")
UNIVERSE_NUMBERS = range(1, 41)
UNIVERSE: tuple[Triple, ...] = tuple(
    (server_uuid, tag, number)
    for server_uuid in UNIVERSE_UUIDS
    for tag in UNIVERSE_TAGS
    for number in UNIVERSE_NUMBERS
)

PROPERTY_SETTINGS = settings(max_examples=200, deadline=None)

scattered_models = st.frozensets(st.sampled_from(UNIVERSE), max_size=30)


@st.composite
def run_models(draw: st.DrawFn) -> frozenset[Triple]:
    """Models made of a few ranges, so merging and splitting of long intervals gets exercised."""
    triples: set[Triple] = set()
    for _ in range(draw(st.integers(0, 5))):
        server_uuid = draw(st.sampled_from(UNIVERSE_UUIDS))
        tag = draw(st.sampled_from(UNIVERSE_TAGS))
        first = draw(st.integers(1, 40))
        last = draw(st.integers(first, 40))
        triples.update((server_uuid, tag, number) for number in range(first, last + 1))
    return frozenset(triples)


models = st.one_of(scattered_models, run_models())


def _runs(numbers: Iterable[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for number in sorted(numbers):
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs


def _mixed_case(text: str) -> str:
    return "".join(char.upper() if index % 2 else char for index, char in enumerate(text))


@st.composite
def rendered_texts(draw: st.DrawFn, model: frozenset[Triple]) -> str:
    """A text MySQL would accept for ``model``, written as unlike the canonical form as possible.

    Runs are cut into pieces, pieces may be repeated or overlap, single numbers may be written
    ``n-n``, one ``(uuid, tag)`` may be spread over several elements, elements are shuffled, UUIDs
    and tags change case, and whitespace and newlines surround the commas.
    """
    numbers_by_source: dict[tuple[str, str], list[int]] = defaultdict(list)
    for server_uuid, tag, number in model:
        numbers_by_source[(server_uuid, tag)].append(number)

    # element key (uuid, element index) -> tag -> interval texts
    elements: dict[tuple[str, int], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for (server_uuid, tag), numbers in sorted(numbers_by_source.items()):
        pieces: list[tuple[int, int]] = []
        for first, last in _runs(numbers):
            cuts = sorted(draw(st.sets(st.integers(first, last - 1), max_size=3))) if last > first else []
            starts = [first] + [cut + 1 for cut in cuts]
            ends = cuts + [last]
            pieces.extend(zip(starts, ends, strict=True))
            for _ in range(draw(st.integers(0, 2))):
                overlap_first = draw(st.integers(first, last))
                pieces.append((overlap_first, draw(st.integers(overlap_first, last))))
        for piece_first, piece_last in pieces:
            if piece_first == piece_last and not draw(st.booleans()):
                written = str(piece_first)
            else:
                written = f"{piece_first}-{piece_last}"
            element_index = draw(st.integers(0, 2))
            elements[(server_uuid, element_index)][tag].append(written)

    element_texts: list[str] = []
    for (server_uuid, _), intervals_by_tag in elements.items():
        case = draw(st.sampled_from([str.lower, str.upper, _mixed_case]))
        parts = [case(server_uuid)]
        # Untagged intervals must come first: once a tag is written it applies until the next tag.
        parts.extend(draw(st.permutations(intervals_by_tag.get("", []))))
        tags = [tag for tag in intervals_by_tag if tag]
        for tag in draw(st.permutations(tags)):
            parts.append(draw(st.sampled_from([tag, tag.upper()])))
            parts.extend(draw(st.permutations(intervals_by_tag[tag])))
        element_texts.append(":".join(parts))

    shuffled = draw(st.permutations(element_texts))
    whitespace = st.sampled_from(["", " ", "\n", "  \n", "\t", " \n "])
    text = draw(whitespace)
    for index, element in enumerate(shuffled):
        if index:
            text += draw(whitespace) + "," + draw(whitespace)
        text += element
    return text + draw(whitespace)


@st.composite
def models_with_texts(draw: st.DrawFn) -> tuple[frozenset[Triple], str]:
    model = draw(models)
    return model, draw(rendered_texts(model))


def from_model(model: Iterable[Triple]) -> GtidSet:
    return GtidSet.of(Gtid(server_uuid, number, tag) for server_uuid, tag, number in model)


def to_model(gtid_set: GtidSet) -> frozenset[Triple]:
    return frozenset((gtid.uuid, gtid.tag, gtid.number) for gtid in gtid_set)


_CANONICAL_INTERVAL = re.compile(r"([1-9][0-9]*)(?:-([1-9][0-9]*))?")


def assert_canonical(text: str) -> None:
    """Check the canonical form structurally, independently of how ``GtidSet`` prints it."""
    if text == "":
        return
    assert text == text.strip() and " " not in text and "\n" not in text
    elements = text.split(",")
    uuids = [element.split(":")[0] for element in elements]
    assert uuids == sorted(set(uuids)), "UUIDs sorted and each printed once"
    for element in elements:
        server_uuid, *tokens = element.split(":")
        assert server_uuid == server_uuid.lower()
        tags_seen: list[str] = []
        previous_last = None
        intervals_since_tag = 0
        for token in tokens:
            match = _CANONICAL_INTERVAL.fullmatch(token)
            if match is None:
                assert token == token.lower()
                assert not tags_seen or intervals_since_tag > 0, "no empty tag group"
                tags_seen.append(token)
                previous_last = None
                intervals_since_tag = 0
                continue
            first = int(match.group(1))
            last = int(match.group(2) or first)
            assert first < last or match.group(2) is None, "a single number is not printed n-n"
            assert previous_last is None or first > previous_last + 1, "ascending, merged, non-adjacent"
            previous_last = last
            intervals_since_tag += 1
        assert intervals_since_tag > 0
        assert tags_seen == sorted(set(tags_seen)), "tags sorted and each printed once"


@PROPERTY_SETTINGS
@given(models_with_texts())
def test_rendered_text_and_of_build_the_same_set_as_the_model(
    model_and_text: tuple[frozenset[Triple], str],
) -> None:
    model, text = model_and_text

    parsed = GtidSet.parse(text)
    built = from_model(model)

    assert to_model(parsed) == model
    assert parsed == built
    assert str(parsed) == str(built)
    assert hash(parsed) == hash(built)
    assert_canonical(str(parsed))


@PROPERTY_SETTINGS
@given(models_with_texts())
def test_parsing_the_canonical_string_gives_back_the_same_set(
    model_and_text: tuple[frozenset[Triple], str],
) -> None:
    _, text = model_and_text
    gtid_set = GtidSet.parse(text)

    again = GtidSet.parse(str(gtid_set))

    assert again == gtid_set
    assert str(again) == str(gtid_set)


@PROPERTY_SETTINGS
@given(models_with_texts(), models_with_texts())
def test_canonical_strings_are_equal_exactly_when_the_models_are(
    left: tuple[frozenset[Triple], str], right: tuple[frozenset[Triple], str]
) -> None:
    (left_model, left_text), (right_model, right_text) = left, right
    left_set, right_set = GtidSet.parse(left_text), GtidSet.parse(right_text)

    assert (str(left_set) == str(right_set)) is (left_model == right_model)
    assert (left_set == right_set) is (left_model == right_model)
    if left_model == right_model:
        assert hash(left_set) == hash(right_set)


@PROPERTY_SETTINGS
@given(models_with_texts(), models_with_texts())
def test_algebra_matches_the_model(
    left: tuple[frozenset[Triple], str], right: tuple[frozenset[Triple], str]
) -> None:
    (left_model, left_text), (right_model, right_text) = left, right
    left_set, right_set = GtidSet.parse(left_text), GtidSet.parse(right_text)

    assert to_model(left_set | right_set) == left_model | right_model
    assert to_model(left_set & right_set) == left_model & right_model
    assert to_model(left_set - right_set) == left_model - right_model
    assert (left_set <= right_set) is (left_model <= right_model)
    assert (left_set >= right_set) is (left_model >= right_model)
    assert left_set.issubset(right_set) is left_model.issubset(right_model)
    assert left_set.issuperset(right_set) is left_model.issuperset(right_model)
    for result in (left_set | right_set, left_set & right_set, left_set - right_set):
        assert_canonical(str(result))


@PROPERTY_SETTINGS
@given(models_with_texts(), models_with_texts())
def test_difference_then_union_with_intersection_recovers_the_set(
    left: tuple[frozenset[Triple], str], right: tuple[frozenset[Triple], str]
) -> None:
    left_set, right_set = GtidSet.parse(left[1]), GtidSet.parse(right[1])

    assert (left_set - right_set) | (left_set & right_set) == left_set
    assert ((left_set - right_set) & right_set).is_empty()
    assert (left_set | right_set) - right_set == left_set - right_set
    assert left_set & right_set <= left_set <= left_set | right_set


@PROPERTY_SETTINGS
@given(models_with_texts())
def test_views_match_the_model(model_and_text: tuple[frozenset[Triple], str]) -> None:
    model, text = model_and_text
    gtid_set = GtidSet.parse(text)

    assert gtid_set.count() == len(model)
    assert gtid_set.is_empty() is (not model)
    assert bool(gtid_set) is bool(model)
    assert gtid_set.uuids == {server_uuid for server_uuid, _, _ in model}
    assert gtid_set.has_tags is any(tag for _, tag, _ in model)
    expected_max: dict[str, int] = {}
    for server_uuid, _, number in model:
        expected_max[server_uuid] = max(expected_max.get(server_uuid, 0), number)
    assert gtid_set.max_per_uuid() == expected_max
    assert list(gtid_set) == [Gtid(u, n, t) for u, t, n in sorted(model)], "canonical order"


@PROPERTY_SETTINGS
@given(models_with_texts())
def test_membership_matches_the_model_for_every_gtid_in_the_universe(
    model_and_text: tuple[frozenset[Triple], str],
) -> None:
    model, text = model_and_text
    gtid_set = GtidSet.parse(text)

    for server_uuid, tag, number in UNIVERSE:
        gtid = Gtid(server_uuid, number, tag)
        assert (gtid in gtid_set) is ((server_uuid, tag, number) in model)
    for gtid in gtid_set:
        assert str(gtid) in gtid_set
        assert Gtid.parse(str(gtid)) == gtid


@PROPERTY_SETTINGS
@given(models_with_texts(), st.sampled_from(UNIVERSE))
def test_add_matches_the_model(model_and_text: tuple[frozenset[Triple], str], triple: Triple) -> None:
    model, text = model_and_text
    server_uuid, tag, number = triple

    added = GtidSet.parse(text).add(Gtid(server_uuid, number, tag))

    assert to_model(added) == model | {triple}


@PROPERTY_SETTINGS
@given(models_with_texts())
def test_untagged_position_round_trips_through_mysql_replication(
    model_and_text: tuple[frozenset[Triple], str],
) -> None:
    model, text = model_and_text
    gtid_set = GtidSet.parse(text)

    if gtid_set.has_tags:
        with pytest.raises(TaggedGtidsUnsupportedError):
            gtid_set.to_replication_position()
        gtid_set = gtid_set - GtidSet.of(gtid for gtid in gtid_set if gtid.tag)
    position = gtid_set.to_replication_position()
    if not position:
        return  # the library reads "" as "no GTID positioning"; the reader guards that case

    theirs = pymysqlreplication.gtid.GtidSet(position)

    assert position == str(gtid_set)
    assert GtidSet.parse(str(theirs)) == gtid_set
    assert to_model(GtidSet.parse(str(theirs))) == {triple for triple in model if not triple[1]}
