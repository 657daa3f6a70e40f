"""The timeline checker applies Perfetto's drop rules (so "nothing dropped" means something).

Each test feeds ``trace_check.check`` a small Chrome-trace that breaks one rule Perfetto's JSON
importer enforces and asserts the checker reports it, next to a well-formed twin it accepts.
"""

from __future__ import annotations

from trace_check import check


def _x(name, ts, dur, tid=1):  # type: ignore[no-untyped-def]
    return {"ph": "X", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}


def test_partially_overlapping_complete_events_on_one_track_drop_the_later_one():
    result = check([_x("a", "1.000", 2.0), _x("b", "2.999", 1.0)])  # b starts inside a
    assert [e["name"] for e in result.dropped] == ["b"]
    assert check([_x("a", "1.000", 2.0), _x("b", "3.000", 1.0)]).dropped == []  # touching


def test_nested_complete_events_and_other_tracks_are_kept():
    result = check([_x("a", "1.000", 5.0), _x("b", "2.000", 1.0), _x("c", "2.500", 9.0, tid=2)])
    assert result.dropped == [] and len(result.slices) == 3
    assert {s.name: s.depth for s in result.slices} == {"a": 0, "b": 1, "c": 0}


def test_an_end_event_without_its_begin_is_dropped():
    result = check([{"ph": "E", "pid": 1, "tid": 1, "ts": "4.000"}])
    assert len(result.dropped) == 1


def test_a_begin_event_without_its_end_stays_unterminated():
    events = [{"ph": "B", "name": "open", "pid": 1, "tid": 1, "ts": "1.000"}]
    assert [s.name for s in check(events).unterminated] == ["open"]
    closed = check([*events, {"ph": "E", "pid": 1, "tid": 1, "ts": "3.000"}])
    assert closed.unterminated == [] and closed.dropped == []
    assert (closed.slices[0].start, closed.slices[0].end) == (1000, 3000)


def test_a_flow_whose_end_has_no_slice_is_not_bound():
    flow = {"cat": "HostToDevice", "name": "HostToDevice", "id": "7", "pid": 1}
    events = [_x("launch", "1.000", 1.0), {**flow, "ph": "s", "tid": 1, "ts": "1.500"},
              {**flow, "ph": "f", "bp": "e", "tid": 2, "ts": "5.000"}]  # nothing on tid 2
    result = check(events)
    assert result.flows == [] and len(result.unbound_flows) == 1
    bound = check([*events[:2], _x("kernel", "5.000", 1.0, tid=2), events[2]])
    assert bound.unbound_flows == [] and [(a.name, b.name) for a, b in bound.flows] == [
        ("launch", "kernel")]


def test_numbers_are_read_as_perfetto_rounds_them():
    # 0.1 + 0.2 as a JSON number is 300.00000000000006 ns: llround gives 300, not 301
    result = check([_x("a", "0.1", 0.2), _x("b", "0.300", 1.0)])
    assert result.dropped == []
