"""Installs the taurus packages, the `taurus` command and the AF_XDP binding.

The AF_XDP binding is a cffi module compiled against libxdp/libbpf at build
time; the XDP redirect program is compiled with clang at the same time.
"""
from setuptools import find_packages, setup

setup(
    name="taurus",
    version="0.1.0",
    description="TAURUS-style congestion-control framework: Numba datapath + CC agent",
    long_description=open("README.md").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    license_files=["LICENSE"],
    keywords="congestion control, datacenter, transport, AF_XDP, Ultra Ethernet, simulation",
    classifiers=[
        "Development Status :: 3 - Alpha",
        "Intended Audience :: Science/Research",
        "Intended Audience :: Telecommunications Industry",
        "License :: OSI Approved :: Apache Software License",
        "Operating System :: POSIX :: Linux",
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: 3.11",
        "Topic :: System :: Networking",
        "Topic :: Scientific/Engineering",
    ],
    python_requires=">=3.11",
    packages=find_packages(include=["taurus", "taurus.*"]),
    package_data={"taurus": ["data/*", "datapath/ports/bpf/*.c", "datapath/ports/bpf/*.o",
                             "tools/topologies/*.toml", "tools/wireshark/*.lua", "examples/*",
                             "reproduce/ledger.toml"]},
    setup_requires=["cffi>=1.15"],
    cffi_modules=["taurus/datapath/ports/xsk_build.py:ffibuilder"],
    install_requires=[
        "numpy>=1.26",
        "numba>=0.68,<0.69",      # private APIs used: _nrt (datapath/hot.py), _set_uuid,
                                  # FunctionIdentity._unique_ids (numba_uids.py); tested here
        "cffi>=1.15",
        "scapy>=2.5",
        "pyroute2>=0.7",
        "matplotlib>=3.7",
        "tqdm>=4.60",
        "tomlkit>=0.12",          # `taurus reproduce --record` keeps the ledger's comments
    ],
    # cluster: `taurus sweep --scheduler` on a Dask distributed cluster;
    # analysis: taurus.results (runs and sweeps as pandas DataFrames)
    extras_require={"test": ["pytest>=7", "pytest-xdist>=3", "hypothesis>=6", "build>=1.0", "wheel>=0.40"],
                    "cluster": ["dask[distributed]>=2024.1"],
                    "analysis": ["pandas>=2.0"]},
    entry_points={"console_scripts": ["taurus = taurus.cli:main"]},
)
