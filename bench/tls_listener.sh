# bench/run's "HTTPS listener" rows (sourced by bench/run): Gatehouse terminating TLS beside nginx
# with the same certificate (P-256) and the same upstream.
#   kept alive     wrk over https on kept-alive connections: /open/hello (auth=none route) through
#                  `gatehouse serve` with GATEHOUSE_TLS_CERT/KEY  vs  nginx `listen ssl` + proxy_pass
#   new connection `openssl s_time -new` (a full handshake per connection, then GET /healthz) and
#                  `-reuse` (the session resumed): the server's CPU per connection, each side
#   idle memory    VmRSS of the same `serve` idle with and without TLS
# Issue bounds: CPU per request or connection at most 1.1x nginx's; idle RSS at most 4 MiB above plain.

declare -A TLS_CONNECT_CPU TLS_CONNECT_COUNT TLS_CONNECT_SKIPPED
TLS_CONNECT_ROWS=()

# A P-256 certificate for 127.0.0.1 (listener.pem/.key in TLS_DIR), for both servers.
make_listener_certificate() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=127.0.0.1 \
        -addext subjectAltName=IP:127.0.0.1 -keyout "$TLS_DIR/listener.key" -out "$TLS_DIR/listener.pem" \
        2> "$TLS_DIR/listener.err" || die "openssl could not make the listener certificate"
    chmod a+r "$TLS_DIR/listener.key" "$TLS_DIR/listener.pem"
}

# start_tls_serve NAME PORT [tls] — `gatehouse serve` with one auth=none route to the bench upstream (the
# provider is never asked: nothing on that route needs it). Sets SERVE_PID_<NAME>.
start_tls_serve() {
    local name=$1 port=$2 tls=${3:-} scheme=http pid options=()
    local env_tls=()
    if [ "$tls" = tls ]; then
        scheme=https
        env_tls=(GATEHOUSE_TLS_CERT="$TLS_DIR/listener.pem" GATEHOUSE_TLS_KEY="$TLS_DIR/listener.key")
        options=(--cacert "$TLS_DIR/listener.pem")
    fi
    env GATEHOUSE_ISSUER=http://127.0.0.1:9/ GATEHOUSE_CLIENT_ID=bench GATEHOUSE_SECRET_KEY="$(gatehouse_secret_key)" \
        GATEHOUSE_PUBLIC_URL="$scheme://127.0.0.1:$port" GATEHOUSE_LISTEN="127.0.0.1:$port" \
        GATEHOUSE_DATABASE="$WORK/serve-$name.sqlite" GATEHOUSE_PUBLIC_DIR="$REPO_DIR/Public" \
        GATEHOUSE_ROUTES="/open=$UPSTREAM_URL/api;auth=none" GATEHOUSE_LOG_LEVEL=warning "${env_tls[@]}" \
        "$GATEHOUSE_BIN" serve > "$WORK/serve-$name.log" 2>&1 &
    pid=$!
    STARTED_PIDS+=("$pid")
    printf -v "SERVE_PID_$name" '%s' "$pid"
    wait_http "gatehouse serve ($name)" "$scheme://127.0.0.1:$port/healthz" "$pid" 30 "${options[@]}" || return 1
}

start_tls_listeners() {
    TLS_LISTENER_PROBLEM=
    make_listener_certificate
    NGINX_TLS_PORT=$(free_port)
    start_nginx tls_front "$BENCH_DIR/nginx/tls_front.conf" "$NGINX_TLS_PORT" "$UPSTREAM_PORT"
    gatehouse_running || { TLS_LISTENER_PROBLEM=$(gatehouse_absent_reason); return 1; }
    GATEHOUSE_TLS_PORT=$(free_port)
    start_tls_serve tls "$GATEHOUSE_TLS_PORT" tls || { TLS_LISTENER_PROBLEM="gatehouse serve with TLS did not start: $(tail -n 3 "$WORK/serve-tls.log" | tr '\n' ' ')"; return 1; }
}

bench_tls_listener_keepalive() {
    local nginx_label="nginx https listener /open/hello" label="gatehouse https listener /open/hello"
    run_wrk "$nginx_label" "https://127.0.0.1:$NGINX_TLS_PORT/open/hello" "$(nginx_pids "$NGINX_PID_tls_front" | tr '\n' ' ')"
    if [ -n "$TLS_LISTENER_PROBLEM" ]; then skip_row "$label" "$TLS_LISTENER_PROBLEM"; return; fi
    run_wrk "$label" "https://127.0.0.1:$GATEHOUSE_TLS_PORT/open/hello" "$SERVE_PID_tls"
}

# connect_row LABEL PORT MODE PIDS — s_time for --duration: connections made and the server's CPU for them
connect_row() {
    local label=$1 port=$2 mode=$3 pids=$4 out seconds user0 system0 user1 system1 connections
    out=$WORK/s_time-${label//[^A-Za-z0-9]/_}.txt
    seconds=$(seconds_of "$DURATION")
    [ -n "${TLS_CONNECT_COUNT[$label]+set}" ] || TLS_CONNECT_ROWS+=("$label")
    # shellcheck disable=SC2086
    read -r user0 system0 < <(cpu_ticks $pids)
    openssl s_time -connect "127.0.0.1:$port" "-$mode" -time "$seconds" -www /healthz > "$out" 2>&1 || true
    # shellcheck disable=SC2086
    read -r user1 system1 < <(cpu_ticks $pids)
    connections=$(awk '/connections in/ { print $1; exit }' "$out")
    if [ -z "$connections" ] || [ "$connections" = 0 ]; then
        TLS_CONNECT_SKIPPED[$label]="s_time made no connection: $(tail -n 2 "$out" | tr '\n' ' ')"
        return
    fi
    TLS_CONNECT_COUNT[$label]=$(( ${TLS_CONNECT_COUNT[$label]:-0} + connections ))
    TLS_CONNECT_CPU[$label]=$(( ${TLS_CONNECT_CPU[$label]:-0} + user1 - user0 + system1 - system0 ))
}

bench_tls_listener_connections() {
    local mode
    for mode in new reuse; do
        connect_row "nginx https $mode connection" "$NGINX_TLS_PORT" "$mode" "$(nginx_pids "$NGINX_PID_tls_front" | tr '\n' ' ')"
        if [ -n "$TLS_LISTENER_PROBLEM" ]; then
            TLS_CONNECT_ROWS+=("gatehouse https $mode connection")
            TLS_CONNECT_SKIPPED["gatehouse https $mode connection"]=$TLS_LISTENER_PROBLEM
            continue
        fi
        connect_row "gatehouse https $mode connection" "$GATEHOUSE_TLS_PORT" "$mode" "$SERVE_PID_tls"
    done
}

# Idle VmRSS of `serve` plain and with TLS, each freshly started, asked once (the TLS one over a
# handshake), then left idle: the same conditions on both sides (the measured TLS instance has
# served the rounds and is not idle in the same sense).
bench_tls_listener_memory() {
    TLS_IDLE_PLAIN= TLS_IDLE_TLS=
    [ -z "$TLS_LISTENER_PROBLEM" ] || return 0
    local plain_port tls_port
    plain_port=$(free_port); tls_port=$(free_port)
    start_tls_serve plain "$plain_port" || return 0
    start_tls_serve tlsidle "$tls_port" tls || return 0
    sleep 3
    TLS_IDLE_PLAIN=$(rss_kib "$SERVE_PID_plain")
    TLS_IDLE_TLS=$(rss_kib "$SERVE_PID_tlsidle")
}

print_tls_listener_report() {
    print_header "HTTPS listener — kept-alive connections, /open/hello proxied (same certificate, same upstream)"
    print_row "nginx https listener /open/hello"
    print_row "gatehouse https listener /open/hello"
    print_ratio "gatehouse https listener /open/hello" "nginx https listener /open/hello" "gatehouse https" "nginx https"
    printf '\nHTTPS listener — a new TLS connection per request (openssl s_time -new: full handshake; -reuse: resumed)\n'
    local label
    for label in "${TLS_CONNECT_ROWS[@]}"; do
        if [ -n "${TLS_CONNECT_SKIPPED[$label]:-}" ]; then
            printf '  %-34s not measured: %s\n' "$label" "${TLS_CONNECT_SKIPPED[$label]}"
        else
            printf '  %-34s %8d connections  CPU %s µs per connection\n' "$label" "${TLS_CONNECT_COUNT[$label]}" \
                "$(awk -v c="${TLS_CONNECT_CPU[$label]}" -v n="${TLS_CONNECT_COUNT[$label]}" -v hz="$CLOCK_TICKS" 'BEGIN { printf "%.1f", c * 1e6 / hz / n }')"
        fi
    done
    local mode
    for mode in new reuse; do
        local g="gatehouse https $mode connection" n="nginx https $mode connection"
        [ -n "${TLS_CONNECT_COUNT[$g]:-}" ] && [ -n "${TLS_CONNECT_COUNT[$n]:-}" ] || continue
        awk -v cg="${TLS_CONNECT_CPU[$g]}" -v ng="${TLS_CONNECT_COUNT[$g]}" -v cn="${TLS_CONNECT_CPU[$n]}" -v nn="${TLS_CONNECT_COUNT[$n]}" -v m="$mode" \
            'BEGIN { if (cn > 0 && nn > 0 && ng > 0) printf "  gatehouse / nginx (%s): CPU per connection %.2f×\n", m, (cg / ng) / (cn / nn) }'
    done
    if [ -n "${TLS_IDLE_PLAIN:-}" ] && [ -n "${TLS_IDLE_TLS:-}" ]; then
        printf '\n  gatehouse serve idle VmRSS: plain %s, with TLS %s (%+d KiB)\n' "$(mib "$TLS_IDLE_PLAIN")" "$(mib "$TLS_IDLE_TLS")" \
            $(( TLS_IDLE_TLS - TLS_IDLE_PLAIN ))
    fi
}
