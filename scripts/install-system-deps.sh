#!/usr/bin/env bash
# System packages the test suite uses, from Debian's packages: an OpenSSH server for the SFTP crawl tests (it
# brings the client tools ssh-keygen, ssh-agent and ssh-add, which the signing tests use), Chromium to render the
# HTML report headless, the Prometheus Pushgateway the run metrics are pushed to and Prometheus' promtool that
# checks conf/monitoring/alerts.yml (in containers without systemd neither starts a service; on a host with
# systemd, Debian starts both: stop them if you do not want them).
# Java 17 is expected on the machine (Spark, Delta, the .lock interlock test).
set -euo pipefail
need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v prometheus-pushgateway >/dev/null 2>&1 || need+=(prometheus-pushgateway)
command -v promtool >/dev/null 2>&1 || need+=(prometheus)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: not root; the tests that need ${need[*]} will be skipped" >&2
  exit 0
fi
echo "install-system-deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
