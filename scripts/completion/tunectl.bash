# bash completion for tunectl: the package installs it as
# /usr/share/bash-completion/completions/tunectl; from a source tree, `source
# scripts/completion/tunectl.bash` completes build/bin/tunectl too.
#
# It reads the help of the tunectl being completed (`tunectl --help`, `tunectl SUBCOMMAND --help`:
# CLI11's layout, "Options:" / "Subcommands:" / "Positionals:" sections of two-space indented
# lines), so the subcommands, options and choices it offers are that binary's, with nothing here to
# keep in step with services/tunectl/main.cpp. Completes:
#   subcommands (and checkpoint's), at any depth
#   options, -x and --long; after one that takes a value, its choices (TEXT:{table,json}) or else
#   file names
#   positionals: file names (experiment files, folders)

# Prints the help of "$@" (a tunectl and its subcommands), or nothing.
_tunectl_help() {
  "$@" --help 2>/dev/null
}

# Reads help text on stdin; prints one line per entry: "sub NAME", "opt NAME" (a flag), "arg NAME
# CHOICES" (an option that takes a value; CHOICES comma-separated or empty) or "pos NAME".
_tunectl_parse() {
  awk '
    /^[A-Za-z][A-Za-z ]*:$/ { section = $0; next }
    /^  [^ ]/ {
      line = substr($0, 3)
      if (section == "Subcommands:") { split(line, w, " "); print "sub " w[1]; next }
      if (section == "Positionals:") { split(line, w, " "); print "pos " w[1]; next }
      if (section != "Options:") next
      # "-c,--connect TEXT (Env:...)", "--output TEXT:{table,json}=table  text", "-d,--detach  text"
      split(line, w, "  ")
      n = split(w[1], f, " ")
      names = f[1]
      type = (n > 1) ? f[2] : ""
      # a value: a type word (TEXT, INT, FLOAT, UINT, ..., maybe with :{...} or =default)
      takes = (type ~ /^[A-Z]+/) ? 1 : 0
      choices = ""
      if (match(type, /\{[^}]*\}/)) choices = substr(type, RSTART + 1, RLENGTH - 2)
      k = split(names, nm, ",")
      for (i = 1; i <= k; i++) {
        if (nm[i] !~ /^-/) continue
        if (takes) print "arg " nm[i] " " choices; else print "opt " nm[i]
      }
    }
  '
}

_tunectl() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" tunectl="${COMP_WORDS[0]}"
  ((COMP_CWORD > 0)) && prev="${COMP_WORDS[COMP_CWORD - 1]}"
  # `--output=js`: bash splits at '=' (COMP_WORDBREAKS), giving "--output" "=" "js".
  local after_equals=false
  if [[ "$cur" == "=" ]]; then
    cur="" after_equals=true prev="${COMP_WORDS[COMP_CWORD - 1]}"
  elif [[ "$prev" == "=" ]] && ((COMP_CWORD > 1)); then
    after_equals=true prev="${COMP_WORDS[COMP_CWORD - 2]}"
  fi
  [[ "$tunectl" == */* || -n "$(type -P -- "$tunectl")" ]] || tunectl=tunectl

  # Walk the words before the cursor: subcommands descend, options that take a value skip it.
  local -a path=("$tunectl")
  local table i word rest
  table="$(_tunectl_help "${path[@]}" | _tunectl_parse)"
  for ((i = 1; i < COMP_CWORD; i++)); do
    word="${COMP_WORDS[i]}"
    [[ "$word" == "=" ]] && { ((i++)); continue; }
    if [[ "$word" == -* ]]; then
      # An option that takes a value in the next word (not --name=value).
      if [[ "$word" != *=* && "${COMP_WORDS[i + 1]:-}" != "=" ]] &&
        grep -q -- "^arg $word\( \|$\)" <<<"$table"; then
        ((i++))
      fi
      continue
    fi
    if grep -qx -- "sub $word" <<<"$table"; then
      path+=("$word")
      table="$(_tunectl_help "${path[@]}" | _tunectl_parse)"
    fi
  done

  COMPREPLY=()
  # The value of an option.
  if [[ "$prev" == -* ]] && { $after_equals || [[ "$cur" != -* ]]; }; then
    local line
    line="$(grep -m1 -- "^arg $prev\( \|$\)" <<<"$table")"
    if [[ -n "$line" ]]; then
      read -r _ _ rest <<<"$line"  # "arg NAME CHOICES"
      if [[ -n "$rest" ]]; then
        mapfile -t COMPREPLY < <(compgen -W "${rest//,/ }" -- "$cur")
      else
        compopt -o filenames 2>/dev/null
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return 0
    fi
  fi
  if [[ "$cur" == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$(awk '$1 == "opt" || $1 == "arg" { print $2 }' \
      <<<"$table")" -- "$cur")
    return 0
  fi
  local subs
  subs="$(awk '$1 == "sub" { print $2 }' <<<"$table")"
  if [[ -n "$subs" ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$subs" -- "$cur")
    # A subcommand with positionals too would list both; tunectl's have one or the other.
    ((${#COMPREPLY[@]})) && return 0
  fi
  if grep -q "^pos " <<<"$table"; then
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
  return 0
}
complete -F _tunectl tunectl
