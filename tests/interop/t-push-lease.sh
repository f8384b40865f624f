#!/bin/bash
# `packwire push --force-with-lease[=<ref>[:<expect>]]` (and
# --force-if-includes, --porcelain) against `git push` in the same
# situations, over file:// and ssh, into stock git receive-pack and packwire
# receive-pack, SHA-1 and SHA-256: the scenarios of lease-lib.sh compare the
# exit status, the output, what the servers were sent and the refs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lease-lib.sh"

use_fake_ssh

for algo in sha1 sha256; do
	for server in git packwire; do
		for transport in file ssh; do
			D=$T/$algo-$server-$transport
			mkdir -p "$D"
			CA=$D/client-a CB=$D/client-b SA=$D/srv-a.git SB=$D/srv-b.git
			make_repo "$CA" "$algo" 2>/dev/null
			git init -q --bare --object-format="$algo" "$SA"
			git init -q --bare --object-format="$algo" "$SB"
			cp -a "$CA" "$CB"
			if [ $transport = file ]; then
				UA=("file://$SA") UB=("file://$SB")
			else
				UA=("ssh://localhost$SA") UB=("ssh://localhost$SB")
			fi
			git -C "$CA" remote add origin "${UA[0]}"
			git -C "$CB" remote add origin "${UB[0]}"
			if [ $server = packwire ]; then
				in_both config remote.origin.receivepack "$PACKWIRE receive-pack"
				# a push by URL names no remote: the receive-pack goes along
				UA=("--receive-pack=$PACKWIRE receive-pack" "${UA[@]}")
				UB=("--receive-pack=$PACKWIRE receive-pack" "${UB[@]}")
			fi
			lease_scenarios "$algo/$server/$transport"
		done
	done
done

finish
