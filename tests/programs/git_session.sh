#!/bin/sh
# A short git session in the current (empty) directory, run whole under
# corral by tests/test_real_programs.py: every git process, including the
# pack-objects children of repack and gc, is preloaded.
#
# Deterministic output: fixed author, committer and dates (the caller sets
# names, HOME and a config-free environment; dates are set here per commit),
# no paths, no timings, no pack sizes (delta search may use threads).
set -e

commit() {      # commit N MESSAGE: the N-th commit, one day after the previous
    export GIT_AUTHOR_DATE="$((1600000000 + $1 * 86400)) +0000"
    export GIT_COMMITTER_DATE="$GIT_AUTHOR_DATE"
    git commit -q -m "$2"
}

git init -q -b main .
mkdir -p src docs
i=1
while [ $i -le 16 ]; do
    seq $i $((i * 13)) > "src/file$i.txt"
    i=$((i + 1))
done
printf 'hello\nworld\n' > docs/readme.txt
git add .
commit 1 "initial files"

i=1
while [ $i -le 16 ]; do
    if [ $((i % 3)) -eq 0 ]; then
        seq $((i * 2)) $((i * 11)) >> "src/file$i.txt"
    fi
    i=$((i + 1))
done
git rm -q src/file7.txt
git add .
commit 2 "grow every third file, drop file7"

git checkout -q -b topic
sed 's/1/one/g' src/file12.txt > src/tmp && mv src/tmp src/file12.txt
printf 'topic line\n' >> docs/readme.txt
git add .
commit 3 "topic: spell out ones"
git checkout -q main
printf 'main line\n' > docs/notes.txt
git add docs/notes.txt
commit 4 "main: notes"
export GIT_AUTHOR_DATE="$((1600000000 + 5 * 86400)) +0000" GIT_COMMITTER_DATE="$((1600000000 + 5 * 86400)) +0000"
git merge -q --no-edit topic

echo "== log"
git log --graph --format='%h %an %ad %s' --date=iso-strict --stat
echo "== diff"
git diff HEAD~3 HEAD -- src/file12.txt docs | head -60
echo "== repack"
git repack -a -d -q
git count-objects -v | grep -E '^(count|in-pack|packs|garbage):'
printf 'changed\n' >> src/file1.txt
rm src/file2.txt
printf 'new\n' > src/untracked.txt
echo "== status"
git status --short
echo "== gc"
git gc -q --prune=now
git fsck --no-progress --full 2>&1
git rev-list --count --all
git cat-file -p HEAD^{tree}
echo "== blame"
git blame -s docs/readme.txt
