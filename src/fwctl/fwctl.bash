# SPDX-License-Identifier: MIT
# bash completion for fwctl(1): its commands, its options and the modes of --json=.
# Needs nothing from the bash-completion package beyond loading this file.

_fwctl()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local verbs="status reload rescan list prewarm"
	local options="-h --help --version --json= -j --no-pager --no-legend --no-ask-password"
	local i

	# "=" is in COMP_WORDBREAKS: "--json=sh" arrives as "--json" "=" "sh"
	if [[ $cur == = && $prev == --json ]]; then
		COMPREPLY=($(compgen -W "short pretty off"))
		return
	fi
	if [[ $prev == = && ${COMP_WORDS[COMP_CWORD-2]} == --json ]]; then
		COMPREPLY=($(compgen -W "short pretty off" -- "$cur"))
		return
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$options" -- "$cur"))
		[[ ${COMPREPLY[*]} == *= ]] && compopt -o nospace 2>/dev/null
		return
	fi
	for ((i = 1; i < COMP_CWORD; i++)); do
		[[ " $verbs " == *" ${COMP_WORDS[i]} "* ]] && return # one command, no arguments
	done
	COMPREPLY=($(compgen -W "$verbs" -- "$cur"))
}

complete -F _fwctl fwctl
