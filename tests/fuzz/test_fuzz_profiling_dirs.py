"""Fuzz: profiling directories - damaged summary CSVs (op_summary, op_statistic, step_trace),
device info JSON and raw files, parts replaced by directories - through ``geplug profile
summary`` (text and JSON) and ``plot``. The directory a user gave is never changed."""

from __future__ import annotations

import os

from fuzz_support import count, mutate, profile_argv, run_cli, scratch, unchanged
from hypothesis import given
from hypothesis import strategies as st

_RUN = "PROF_000001_20260101000000000_ABCDEFGHIJKLMNOP"
_FILES = {
    "mindstudio_profiler_output/op_summary_20260101000000.csv":
        b"Device_id,Model ID,Task ID,Stream ID,Op Name,OP Type,Task Type,Task Start Time(us),"
        b"Task Duration(us),Task Wait Time(us)\n"
        b"0,1,3,1,fc1,MatMulV2,AI_CORE,1700000000000000.100\t,12.5,0\n"
        b"0,1,4,1,relu,Relu,AI_VECTOR_CORE,1700000000000013.000\t,1.25,0.1\n",
    "mindstudio_profiler_output/op_statistic_20260101000000.csv":
        b"Device_id,Model Name,OP Type,Core Type,Count,Total Time(us),Min Time(us),"
        b"Avg Time(us),Max Time(us),Ratio(%)\n0,m,MatMulV2,AI_CORE,1,12.5,12.5,12.5,12.5,90\n",
    "mindstudio_profiler_output/step_trace_20260101000000.csv":
        b"Device_id,Iteration ID,Model ID,Iteration Time(us),FP to BP Time(us)\n"
        b"0,1,1,100.5,N/A\n",
    "device_0/info.json.0": b'{"product": "fuzzcard", "devices": "0"}',
    "device_0/data/task_time.data.0.slice_0": b"\x00\x01\x02\x03" * 16,
}


@given(data=st.data(), command=st.sampled_from(["summary", "json", "plot"]))
def test_profile_commands_answer_on_a_damaged_directory(data: st.DataObject,
                                                        command: str) -> None:
    count("profiling directory")
    with scratch() as tmp:
        prof = os.path.join(tmp, _RUN)
        victims = data.draw(st.sets(st.sampled_from(sorted(_FILES)), min_size=1, max_size=3))
        for rel, content in _FILES.items():
            path = os.path.join(prof, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            if rel in victims and data.draw(st.integers(0, 6)) == 0:
                os.makedirs(path)  # a file replaced by a directory
                continue
            with open(path, "wb") as fh:
                fh.write(mutate(content, data.draw) if rel in victims else content)
        argv = profile_argv(command, prof, os.path.join(tmp, "plot.png"))
        with unchanged(prof):
            run_cli(argv, names=(_RUN, "op_summary", "op_statistic", "step_trace",
                                 "matplotlib"))
        assert not [n for n in os.listdir(tmp) if n.endswith(".tmp")]
