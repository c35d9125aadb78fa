# metalflow: the two commands are `make demo` and `make test` (see README).
.PHONY: install demo demo-k8s test stack-up stack-down stack-status typecheck bench

install:
	@bash scripts/install.sh

# The API-mode demo never runs Kubernetes: it skips the kube-apiserver build (the long part of a first install),
# and the Jaeger build (its traces are on when `make install` or `make test` built it).
demo:
	@bash scripts/install.sh --skip-kube --skip-test-server --skip-jaeger
	@bash scripts/demo.sh

demo-k8s: install
	@bash scripts/demo-k8s.sh

test: install
	@bash scripts/test.sh

stack-up:
	@bash scripts/install.sh --skip-kube --skip-test-server --skip-jaeger
	@bash scripts/stack.sh start

stack-down:
	@bash scripts/stack.sh stop
	@bash scripts/ipmi-sim.sh stop
	@bash scripts/kube.sh stop
	@if [ "$$(id -u)" = 0 ]; then DHCP_SITE=demo DHCP_NETNS=$${DEMO_DHCP_NETNS:-mf-dhcp-demo} bash scripts/dnsmasq.sh stop; fi

stack-status:
	@bash scripts/stack.sh status

typecheck: install
	@npx tsc --noEmit -p .
