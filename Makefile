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

test: deps
	$(PY) -m pytest -q --durations=25 tests  # the slowest tests are listed: the suite must stay under 15 min

demo: deps
	$(PY) -m taurus.cli demo

bench: deps
	$(PY) bench/io.py

clean:
	$(PY) -m taurus.cli topo clean
	rm -rf build *.egg-info $(STAMP)
