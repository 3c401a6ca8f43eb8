#!/usr/bin/python3
"""Interoperability: a run file written by rtrace reads back with h5py (Debian python3-h5py)."""
import math
import os
import subprocess
import sys

try:
    import h5py
except ImportError:
    print("SKIP: python3-h5py is not installed for /usr/bin/python3")
    sys.exit(77)

writer, path = sys.argv[1], sys.argv[2]
subprocess.run(["rm", "-rf", path, path + ".d"], check=True)
subprocess.run([writer, path, "3"], check=True)

with h5py.File(path, "r") as f:
    assert f.attrs["schema_name"] == "rtrace", f.attrs["schema_name"]
    assert f.attrs["schema_version"].startswith("1."), f.attrs["schema_version"]
    # Point-file layout: /points/pNNNNNN are external links into run.h5.d/, which h5py follows.
    assert f.attrs["points_dir"] == os.path.basename(path) + ".d", f.attrs["points_dir"]
    link = f["/points"].get("p000001", getlink=True)
    assert isinstance(link, h5py.ExternalLink) and link.filename == os.path.basename(path) + ".d/p000001.h5", link
    pts = f["/sweep/points"][:]
    assert list(pts["point_id"]) == [0, 1, 2], pts["point_id"]
    assert all(pts["complete"] == 1)
    assert pts["status"][0] == b"ok"
    units = list(f["/sweep/points"].attrs["units"])
    assert len(units) == len(pts.dtype.names)
    assert units[pts.dtype.names.index("wall_s")] == "s"
    ceil = f["/points/p000002/ceilings"][:]
    dram = [r for r in ceil if r["name"] == b"DRAM"][0]
    assert dram["value"] == 12.0 and dram["unit"] == b"GB/s", dram
    regions = f["/points/p000001/ranks/r000001/regions"][:]
    names = [n.decode() if isinstance(n, bytes) else n for n in f["/points/p000001/ranks/r000001/names"][:]]
    assert names[int(regions[3]["name_id"])] == "region_3"
    assert regions[3]["calls"] == 1103
    assert math.isnan(regions[0]["flops_fp32"])
    out = f["/points/p000000/stdout"][()]
    out = out.decode() if isinstance(out, bytes) else out
    assert out == "point 0 ok\n", out
print("h5py read the run file: OK")
