# Taurus: `make demo` and `make test` install whatever is missing, then act.
# Both are idempotent: apt runs only when a package is missing, pip only when
# the installed tree is older than setup.py.  wireshark-common (tshark's) asks
# whether non-root users may capture: preseeded "no" (we capture as root).
# chromium renders `taurus report --html` headless in the tests.
PY       ?= python3
APT_PKGS := libxdp-dev libbpf-dev libelf-dev zlib1g-dev pkg-config clang llvm \
            iproute2 iputils-ping ethtool iperf3 tcpdump procps tshark chromium
STAMP    := .install-stamp

.PHONY: deps apt pip test demo bench clean

deps: apt pip

apt:
	@missing=""; for p in $(APT_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "apt: installing$$missing"; \
	  echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

pip: $(STAMP)

$(STAMP): setup.py $(wildcard taurus/datapath/ports/xsk_build.py taurus/datapath/ports/bpf/*.c)
	$(PY) -m pip install -q --disable-pip-version-check cffi  # setup.py builds a cffi module
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,cluster,analysis]'
	@touch $(STAMP)

# The suite must stay under 15 min on 2 cores; the slowest tests are listed.
# Virtual-time tests run on both cores, then the serial ones (real packets,
# the wall clock) alone: tests/conftest.py.
test: deps
	$(PY) -m pytest -q -n 2 -m "not serial" --durations=15 tests
	$(PY) -m pytest -q -m serial --durations=15 tests

demo: deps
	$(PY) -m taurus.cli demo

bench: deps
	$(PY) bench/io.py

clean:
	$(PY) -m taurus.cli topo clean
	rm -rf build *.egg-info $(STAMP)
