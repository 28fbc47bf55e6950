#!/usr/bin/python3
"""Independent reader of the TensorBoard event files a run wrote: TFRecord framing and CRC32C checked
here in Python, Event messages parsed with Debian's protobuf package from Python code that protoc
generates from src/train/event.proto. Checks the version record of every file, the expected scalar
tags, that the scalars equal stats.jsonl and metric-*.jsonl, and that images are PNGs of the stated
size. The files of a resumed run are read as TensorBoard reads them: in name order, a session START
at step S dropping the values of steps >= S read before it.

  check_events.py RUN_DIR PROTO_FILE [--no-images]
"""
import glob
import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile

EXPECTED_TAGS = ["Loss/G/loss", "Loss/D/loss", "Loss/r1_penalty", "Loss/pl_penalty", "Loss/scores/fake",
                 "Timing/sec_per_kimg", "Timing/sec_per_tick", "Timing/img_per_sec", "Resources/cpu_mem_gb", "Progress/kimg"]


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def records(path):
    with open(path, "rb") as f:
        data = f.read()
    offset = 0
    while offset < len(data):
        header = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", header)
        (length_crc,) = struct.unpack("<I", data[offset + 8:offset + 12])
        assert length_crc == masked(crc32c(header)), f"{path}: bad length CRC at {offset}"
        payload = data[offset + 12:offset + 12 + length]
        (payload_crc,) = struct.unpack("<I", data[offset + 12 + length:offset + 16 + length])
        assert payload_crc == masked(crc32c(payload)), f"{path}: bad payload CRC at {offset}"
        yield payload
        offset += 16 + length


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def main():
    run_dir, proto = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(["protoc", f"--python_out={out}", f"-I{os.path.dirname(proto)}", proto], check=True)
        sys.path.insert(0, out)
        event_pb2 = importlib.import_module(os.path.basename(proto)[:-len(".proto")] + "_pb2")
        files = sorted(glob.glob(os.path.join(run_dir, "events.out.tfevents.*")))
        assert files, f"no event file in {run_dir}"
        events, starts = [], 0
        for path in files:
            for index, payload in enumerate(records(path)):
                event = event_pb2.Event()
                event.ParseFromString(payload)
                if index == 0:
                    assert event.file_version == "brain.Event:2", f"{path}: the first event must carry the file version"
                elif event.HasField("session_log") and event.session_log.status == event_pb2.SessionLog.START:
                    events = [e for e in events if e.step < event.step]
                    starts += 1
                else:
                    events.append(event)
    assert starts == len(files) - 1, f"{len(files)} event files but {starts} session starts"
    scalars, images = {}, {}
    for event in events:
        for value in event.summary.value:
            if value.HasField("image"):
                images.setdefault(value.tag, []).append((event.step, value.image))
            else:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    missing = [t for t in EXPECTED_TAGS if t not in scalars]
    assert not missing, f"missing scalar tags {missing}; have {sorted(scalars)}"

    ticks = [json.loads(line) for line in open(os.path.join(run_dir, "stats.jsonl"))]
    for tag in EXPECTED_TAGS:
        expected = [(round(t["Progress/kimg"]["mean"] * 1000), t[tag]["mean"]) for t in ticks if tag in t and t[tag]["num"] > 0]
        got = scalars[tag]
        assert [s for s, _ in got] == [s for s, _ in expected], f"{tag}: steps {got} vs stats.jsonl {expected}"
        for (_, a), (_, b) in zip(got, expected):
            assert abs(a - b) <= 1e-6 * max(1.0, abs(b)) + abs(b) * 2 ** -23, f"{tag}: {a} vs stats.jsonl {b}"
    for path in glob.glob(os.path.join(run_dir, "metric-*.jsonl")):
        name = os.path.basename(path)[len("metric-"):-len(".jsonl")]
        lines = [json.loads(line) for line in open(path)]
        for key in lines[0]["results"]:  # the metric's name, or its parts (pr: _precision, _recall)
            got = [v for _, v in scalars.get("Metrics/" + key, [])]
            expected = [line["results"][key] for line in lines]
            assert len(got) == len(expected) and all(abs(a - b) <= 1e-6 * abs(b) for a, b in zip(got, expected)), \
                f"Metrics/{key} of {name}: {got} vs {expected}"
    for step, image in images.get("fakes", []):
        png = image.encoded_image_string
        assert png[:8] == b"\x89PNG\r\n\x1a\n", "image is not a PNG"
        width, height = struct.unpack(">II", png[16:24])
        assert (width, height) == (image.width, image.height), f"PNG {width}x{height} vs {image.width}x{image.height}"
    assert images.get("fakes") or "--no-images" in sys.argv[3:], "no fakes image"
    print(f"check_events: {len(files)} file(s), {len(events)} events, {len(scalars)} scalar tags, "
          f"{len(images.get('fakes', []))} images: ok")


if __name__ == "__main__":
    main()
