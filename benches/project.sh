# Sourced by the shell benchmarks: `bench_project BIN T` makes a project of one commit in
# `$T/repo` (guild-hall initialised, its home `$T/home`, a user home `$T/uhome`, no global
# git config) and enters it.
bench_project() {
    export GUILD_HALL_HOME=$2/home GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 HOME=$2/uhome
    mkdir -p "$2/repo" "$2/uhome" && cd "$2/repo"
    git init -q -b main && git config user.name t && git config user.email t@e
    echo hi > README.md && git add -A && git commit -qm init
    "$1" init >/dev/null
}
