#!/bin/bash
# SPDX-License-Identifier: MIT
# The bash completion offers what `fwctl --help` lists, and completes in the places it should.
# usage: test-completion.sh FWCTL.BASH FWCTL
set -u
source "$1"
fwctl=$2
failed=0

# complete WORD...: the completions for the command line WORD..., the last one being completed
complete_line() {
	COMP_WORDS=("$@")
	COMP_CWORD=$(($# - 1))
	COMPREPLY=()
	_fwctl
	[ ${#COMPREPLY[@]} -eq 0 ] || printf '%s\n' "${COMPREPLY[@]}" | sort | tr '\n' ' '
}

expect() { # expect WHAT GOT WANT
	if [ "$2" = "$3" ]; then
		echo "ok   $1"
	else
		echo "FAIL $1: got '$2', wanted '$3'"
		failed=1
	fi
}

help=$("$fwctl" --help)
verbs=$(sed -n '/^Commands:/,/^$/p' <<<"$help" | awk '/^  [a-z]/ { print $1 }' | sort | tr '\n' ' ')
# the first column of "Options:", "--json=MODE" as "--json="
options=$(sed -n '/^Options:/,/^$/p' <<<"$help" | grep -E '^ +-' | sed -E 's/^ +//; s/  .*//' |
	  tr ' ' '\n' | sed 's/=.*/=/' | sort | tr '\n' ' ')

expect "every command of --help" "$(complete_line fwctl '')" "$verbs"
expect "every option of --help" "$(complete_line fwctl -)" "$options"
expect "long options by prefix" "$(complete_line fwctl --no-)" "--no-ask-password --no-legend --no-pager "
expect "--json= modes" "$(complete_line fwctl --json =)" "off pretty short "
expect "--json=p" "$(complete_line fwctl --json = p)" "pretty "
expect "commands by prefix" "$(complete_line fwctl --no-pager re)" "reload rescan "
expect "nothing after the command" "$(complete_line fwctl list '')" ""
exit $failed
