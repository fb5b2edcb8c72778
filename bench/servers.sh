# servers.sh — sourced by sim-compare.sh and sim-counts.sh.

# check_servers SCRIPT: exits 2 unless SERVERS names one or more of naive,
# spate and floor, saying so as SCRIPT.
check_servers() {
	local which
	for which in $SERVERS; do
		case $which in naive | spate | floor) ;; *)
			echo "$1: SERVERS: unknown server \"$which\"; use naive, spate and floor" >&2
			exit 2
			;;
		esac
	done
	if [[ -z ${SERVERS// /} ]]; then
		echo "$1: SERVERS is empty; use naive, spate and floor" >&2
		exit 2
	fi
}
