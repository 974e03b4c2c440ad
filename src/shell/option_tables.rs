//! The option tables of the programs keel may run without asking (notation in
//! [`super::options::Table::parse`]). Unsafe options must all be listed: with the read-only
//! jail an unknown option is left to the jail, so a missing unsafe entry would only be caught
//! by the OS; without the jail an unknown option asks.

pub const SPECS: &[(&str, &str)] = &[
    (
        "ls",
        "-a|--all -A|--almost-all --author -b|--escape --block-size= -B|--ignore-backups -c -C --color? -d|--directory \
         -D|--dired -f -F|--classify? --file-type --format= --full-time -g --group-directories-first -G|--no-group \
         -h|--human-readable --si -H|--dereference-command-line --dereference-command-line-symlink-to-dir --hide= \
         --hyperlink? --indicator-style= -i|--inode -I|--ignore= -k|--kibibytes -l -L|--dereference -m \
         -n|--numeric-uid-gid -N|--literal -o -p -q|--hide-control-chars --show-control-chars -Q|--quote-name \
         --quoting-style= -r|--reverse -R|--recursive -s|--size -S --sort= --time= --time-style= -t -T|--tabsize= \
         -u -U -v -w|--width= -x -X -Z|--context -1 --help --version",
    ),
    (
        "cat",
        "-A|--show-all -b|--number-nonblank -e -E|--show-ends -n|--number -s|--squeeze-blank -t -T|--show-tabs -u \
         -v|--show-nonprinting --help --version",
    ),
    (
        "head",
        "#NUM -c|--bytes= -n|--lines= -q|--quiet --silent -v|--verbose -z|--zero-terminated --help --version",
    ),
    (
        "tail",
        "#NUM -c|--bytes= -f|--follow? -F -n|--lines= --max-unchanged-stats= --pid= -q|--quiet --silent --retry \
         -s|--sleep-interval= -v|--verbose -z|--zero-terminated --help --version",
    ),
    (
        "grep",
        "-E|--extended-regexp -F|--fixed-strings -G|--basic-regexp -P|--perl-regexp -e|--regexp= -f|--file=< \
         -i|--ignore-case --no-ignore-case -v|--invert-match -w|--word-regexp -x|--line-regexp -y -c|--count \
         --color? --colour? -L|--files-without-match -l|--files-with-matches -m|--max-count= -o|--only-matching \
         -q|--quiet --silent -s|--no-messages -b|--byte-offset -H|--with-filename -h|--no-filename --label= \
         -n|--line-number -T|--initial-tab -u|--unix-byte-offsets -Z|--null -A|--after-context= \
         -B|--before-context= -C|--context= #NUM -a|--text --binary-files= -D|--devices= -d|--directories= \
         --exclude= --exclude-from=< --exclude-dir= --include= -r|--recursive -R|--dereference-recursive \
         --line-buffered -U|--binary -z|--null-data --help -V|--version",
    ),
    (
        "rg",
        "-A|--after-context= -B|--before-context= -C|--context= -c|--count --count-matches --color= --colors= \
         --column --no-column -e|--regexp= -f|--file=< -F|--fixed-strings -g|--glob= --iglob= -i|--ignore-case \
         -S|--smart-case -s|--case-sensitive -j|--threads= -l|--files-with-matches --files-without-match --files \
         -L|--follow --no-follow -M|--max-columns= --max-columns-preview -m|--max-count= --max-depth= -d \
         --max-filesize= -n|--line-number -N|--no-line-number -o|--only-matching -p|--pretty -q|--quiet \
         -r|--replace= -t|--type= -T|--type-not= --type-list --type-add= -u|--unrestricted -v|--invert-match \
         -w|--word-regexp -x|--line-regexp -H|--with-filename -I|--no-filename --hidden --no-hidden --no-ignore \
         --no-ignore-vcs --no-ignore-dot --no-ignore-global --no-ignore-parent --ignore-file=< --json --no-messages \
         --sort= --sortr= --stats --trim -U|--multiline --multiline-dotall -P|--pcre2 --engine= -0|--null \
         --null-data -a|--text --binary --no-heading --heading --vimgrep -b|--byte-offset --passthru \
         --pre=! --pre-glob= -z|--search-zip! --hostname-bin=! --hyperlink-format= --debug --trace -h|--help \
         -V|--version --no-config --context-separator= --field-match-separator= -E|--encoding=",
    ),
    (
        "wc",
        "-c|--bytes -m|--chars -l|--lines -L|--max-line-length -w|--words --files0-from=! --total= --help --version",
    ),
    (
        "diff",
        "-q|--brief -s|--report-identical-files -c -C|--context? -u -U|--unified? -e|--ed -n|--rcs -y|--side-by-side \
         -W|--width= --left-column --suppress-common-lines -p|--show-c-function -F|--show-function-line= \
         --label= --expand-tabs -t -T|--initial-tab --tabsize= --suppress-blank-empty -l|--paginate! -r|--recursive \
         --no-dereference -N|--new-file --unidirectional-new-file --ignore-file-name-case --no-ignore-file-name-case \
         -x|--exclude= -X|--exclude-from=< -S|--starting-file= --from-file=< --to-file=< -i|--ignore-case \
         -E|--ignore-tab-expansion -Z|--ignore-trailing-space -b|--ignore-space-change -w|--ignore-all-space \
         -B|--ignore-blank-lines -I|--ignore-matching-lines= -a|--text --strip-trailing-cr -D|--ifdef= \
         --GTYPE-group-format= --line-format= --LTYPE-line-format= -d|--minimal --horizon-lines= \
         --speed-large-files --color? --palette= --help -v|--version",
    ),
    (
        "stat",
        "-L|--dereference -f|--file-system -c|--format= --printf= -t|--terse --cached= --help --version",
    ),
    (
        "du",
        "-0|--null -a|--all --apparent-size -B|--block-size= -b|--bytes -c|--total -D|--dereference-args -d|--max-depth= \
         --files0-from=! -H --inodes -h|--human-readable -k -L|--dereference -l|--count-links -m -P|--no-dereference \
         -S|--separate-dirs --si -s|--summarize -t|--threshold= --time? --time-style= -X|--exclude-from=< --exclude= \
         -x|--one-file-system --help --version",
    ),
    (
        "df",
        "-a|--all -B|--block-size= -h|--human-readable -H|--si -i|--inodes -k -l|--local --no-sync --output? -P|--portability \
         --sync --total -t|--type= -T|--print-type -x|--exclude-type= --help --version",
    ),
    (
        "sort",
        "-b|--ignore-leading-blanks -d|--dictionary-order -f|--ignore-case -g|--general-numeric-sort \
         -i|--ignore-nonprinting -M|--month-sort -h|--human-numeric-sort -n|--numeric-sort -R|--random-sort \
         --random-source=< -r|--reverse --sort= -V|--version-sort --batch-size= -c --check? -C -k|--key= -m|--merge \
         -o|--output=! -s|--stable -S|--buffer-size= -t|--field-separator= -T|--temporary-directory=! --parallel= \
         -u|--unique -z|--zero-terminated --compress-program=! --files0-from=! --debug --help --version",
    ),
    (
        "uniq",
        "-c|--count -d|--repeated -D --all-repeated? -f|--skip-fields= --group? -i|--ignore-case -s|--skip-chars= \
         -u|--unique -z|--zero-terminated -w|--check-chars= --help --version",
    ),
    (
        "cut",
        "-b|--bytes= -c|--characters= -d|--delimiter= -f|--fields= -n --complement -s|--only-delimited \
         --output-delimiter= -z|--zero-terminated --help --version",
    ),
    (
        "nl",
        "-b|--body-numbering= -d|--section-delimiter= -f|--footer-numbering= -h|--header-numbering= \
         -i|--line-increment= -l|--join-blank-lines= -n|--number-format= -p|--no-renumber -s|--number-separator= \
         -v|--starting-line-number= -w|--number-width= --help --version",
    ),
    (
        "column",
        "-c|--output-width= -d|--table-noheadings -e|--table-header-repeat -E|--table-noextreme= -H|--table-hide= \
         -i|--tree-id= -J|--json -l|--table-columns-limit= -L|--keep-empty-lines -n|--table-name= \
         -N|--table-columns= -o|--output-separator= -O|--table-order= -p|--tree-parent= -r|--tree= \
         -R|--table-right= -s|--separator= -t|--table -T|--table-truncate= -W|--table-wrap= -x|--fillrows \
         -h|--help -V|--version",
    ),
    (
        "jq",
        "-c|--compact-output -r|--raw-output -j|--join-output -a|--ascii-output -n|--null-input -s|--slurp \
         -e|--exit-status -S|--sort-keys -C|--color-output -M|--monochrome-output --tab --indent= --unbuffered \
         --stream --stream-errors --seq -f|--from-file=< --arg= --argjson= --slurpfile= --rawfile= --args --jsonargs \
         -R|--raw-input --raw-output0 -L|--library-path= -h|--help -V|--version --build-configuration",
    ),
    (
        "md5sum",
        "-b|--binary -c|--check! --tag -t|--text -z|--zero --ignore-missing --quiet --status --strict -w|--warn --help --version",
    ),
    (
        "sha1sum",
        "-b|--binary -c|--check! --tag -t|--text -z|--zero --ignore-missing --quiet --status --strict -w|--warn --help --version",
    ),
    (
        "sha256sum",
        "-b|--binary -c|--check! --tag -t|--text -z|--zero --ignore-missing --quiet --status --strict -w|--warn --help --version",
    ),
    (
        "sha512sum",
        "-b|--binary -c|--check! --tag -t|--text -z|--zero --ignore-missing --quiet --status --strict -w|--warn --help --version",
    ),
    (
        "cmp",
        "-b|--print-bytes -i|--ignore-initial= -l|--verbose -n|--bytes= -s|--quiet --silent --help -v|--version",
    ),
    (
        "tree",
        "-a -d -l -f -x -L= -R -P= -I= --gitignore --gitfile=< --ignore-case --matchdirs --metafirst --prune \
         --info --infofile=< --noreport --charset= --filelimit= -o! -q -N -Q -p -u -g -s -h --si --du -D --timefmt= \
         -F --inodes --device -v -t -c -U -r --dirsfirst --filesfirst --sort= -i -A -S -n -C -X -J -H= -T= \
         --nolinks --fromfile --help --version",
    ),
    (
        "file",
        "-b|--brief -C|--compile! -c|--checking-printout -d --debug -E -e|--exclude= --exclude-quiet= \
         --extension -F|--separator= -f|--files-from=< -h|--no-dereference -i|--mime --mime-type --mime-encoding \
         -k|--keep-going -l|--list -L|--dereference -m|--magic-file=< -N|--no-pad -n|--no-buffer \
         -0|--print0 -p|--preserve-date -P|--parameter= -r|--raw -s|--special-files -S|--no-sandbox \
         -z|--uncompress -Z|--uncompress-noreport --apple --help -v|--version",
    ),
    (
        "date",
        "-d|--date= --debug -f|--file=< -I|--iso-8601? --resolution -R|--rfc-email --rfc-3339= -r|--reference=< \
         -s|--set=! -u|--utc --universal --help --version",
    ),
    (
        "readlink",
        "-f|--canonicalize -e|--canonicalize-existing -m|--canonicalize-missing -n|--no-newline -q|--quiet -s|--silent -v|--verbose -z|--zero --help --version",
    ),
    (
        "realpath",
        "-e|--canonicalize-existing -m|--canonicalize-missing -L|--logical -P|--physical -q|--quiet --relative-to= --relative-base= -s|--strip --no-symlinks -z|--zero --help --version",
    ),
    ("basename", "-a|--multiple -s|--suffix= -z|--zero --help --version"),
    ("dirname", "-z|--zero --help --version"),
    (
        "uname",
        "-a|--all -s|--kernel-name -n|--nodename -r|--kernel-release -v|--kernel-version -m|--machine -p|--processor -i|--hardware-platform -o|--operating-system --help --version",
    ),
    (
        "id",
        "-a -Z|--context -g|--group -G|--groups -n|--name -r|--real -u|--user -z|--zero --help --version",
    ),
    ("whoami", "--help --version"),
    (
        "which",
        "-a --all -s --skip-alias --skip-dot --skip-tilde --show-dot --show-tilde --tty-only --read-alias --read-functions",
    ),
    (
        "hostname",
        "-a|--alias -A|--all-fqdns -d|--domain -f|--fqdn|--long -i|--ip-address -I|--all-ip-addresses -s|--short -y|--yp|--nis -h|--help -V|--version",
    ),
    ("pwd", "-L -P --help --version"),
    ("cd", "-L -P -e -@"),
    ("find", "-H -L -P -D= -O?"),
    (
        "mkdir",
        "-m|--mode= -p|--parents -v|--verbose -Z --context? --help --version",
    ),
    (
        "touch",
        "-a -c|--no-create -d|--date= -f -h|--no-dereference -m -r|--reference=< -t= --time= --help --version",
    ),
    (
        "cp",
        "-a|--archive --attributes-only -b! --backup?! --copy-contents -d -f|--force -i|--interactive -H -l|--link \
         -L|--dereference -n|--no-clobber -P|--no-dereference -p --preserve? --no-preserve= --parents -R|--recursive \
         -r --reflink? --remove-destination --sparse= --strip-trailing-slashes -s|--symbolic-link -S|--suffix=! \
         -t|--target-directory= -T|--no-target-directory -u --update? -v|--verbose -x|--one-file-system -Z \
         --context? --keep-directory-symlink --debug --help --version",
    ),
    (
        "mv",
        "-b! --backup?! --debug -f|--force -i|--interactive -n|--no-clobber --no-copy --strip-trailing-slashes \
         -S|--suffix=! -t|--target-directory= -T|--no-target-directory --exchange -u --update? -v|--verbose -Z \
         --context --help --version",
    ),
    (
        "git",
        "-C= -c=! --config-env=! --exec-path?! --git-dir= --work-tree= --namespace= --no-pager -P -p|--paginate --bare \
         --no-replace-objects --no-lazy-fetch --literal-pathspecs --glob-pathspecs --noglob-pathspecs \
         --icase-pathspecs --no-optional-locks --no-advice --attr-source= --list-cmds=! --html-path --man-path \
         --info-path --version --help",
    ),
];

/// Options of git's read-only subcommands. Those that write files, run programs or reach the
/// network are marked unsafe; the rest of a subcommand's many options are safe to leave to
/// the jail, and without it only the listed ones run without asking.
pub const GIT_COMMON: &str = "--output=! --ext-diff! --no-ext-diff --textconv --no-textconv --open-files-in-pager?! \
     -O?! --upload-pack=! --exec=! --receiver=! --filters! --path= --source --contents=< \
     --no-index -p -u --patch -s --no-patch -U|--unified= --raw --patch-with-raw --stat? --numstat --shortstat \
     --dirstat? --summary --name-only --name-status --submodule? --color? --no-color --word-diff? --color-words? \
     --no-renames -M|--find-renames? -C|--find-copies? --diff-filter= -S= -G= --pickaxe-all -R --relative? -a|--text \
     -w|--ignore-all-space -b|--ignore-space-change --ignore-blank-lines --ignore-cr-at-eol --minimal --patience \
     --histogram --diff-algorithm= --exit-code --quiet --cached --staged --merge-base -z --abbrev? --full-index \
     --binary --src-prefix= --dst-prefix= --no-prefix --default-prefix --line-prefix= --inter-hunk-context= \
     -W|--function-context --ita-invisible-in-index --check -n|--max-count= --skip= --since= --after= --until= \
     --before= --author= --committer= --grep= --all-match --invert-grep -i|--regexp-ignore-case -E|--extended-regexp \
     -F|--fixed-strings --merges --no-merges --first-parent --all --branches? --tags? --remotes? --glob= --exclude= \
     --not --reverse --topo-order --date-order --author-date-order --oneline --graph --decorate? --no-decorate \
     --decorate-refs= --format= --pretty? --abbrev-commit --no-abbrev-commit --date= --relative-date --follow \
     -L= --left-right --cherry-pick --cherry-mark --boundary --ancestry-path --simplify-by-decoration --show-signature \
     --notes? --no-notes --log-size --parents --children --count --walk-reflogs -g --mailmap --no-mailmap --use-mailmap \
     --encoding= --expand-tabs? --no-expand-tabs --show-linear-break? --show-pulls --full-diff --remerge-diff \
     --diff-merges= -m -c --cc --dd --no-diff-merges -t -r --root --no-commit-id --always --long --tags --contains= \
     --no-contains= --points-at= --sort= --merged? --no-merged? --column? --no-column --porcelain? --short -v|--verbose \
     -vv -q --branch --show-stash --ahead-behind --no-ahead-behind --untracked-files? --ignored? --ignore-submodules? \
     --renames --find-renames? --long --show-toplevel --show-prefix --show-cdup --git-dir --git-common-dir \
     --is-inside-work-tree --is-inside-git-dir --is-bare-repository --abbrev-ref? --symbolic-full-name --verify \
     --short? --absolute-git-dir --show-superproject-working-tree --shallow-repository --local-env-vars --sq -e \
     --name-rev --line-porcelain --incremental --score-debug -l --show-name --show-number --show-email -f -T \
     --stdin! --deleted --modified --others --ignored --stage --killed --directory --no-empty-directory --unmerged \
     --exclude-standard --error-unmatch --full-name --recurse-submodules --eol --deduplicate --format= -d -o -k -x= \
     -X= --exclude-from=< --exclude-per-directory= --with-tree= --name-status -h -H -I --max-depth= --and --or \
     --not --break --heading --line-number --column --function-context --show-function --threads= --no-recursive \
     --untracked --no-exclude-standard --all-match --files-with-matches --files-without-match --count --null \
     --perl-regexp --basic-regexp -P -B= -A= -e= --list -a --remotes --show-current --batch? --batch-check? \
     --batch-command? --batch-all-objects --buffer --unordered --follow-symlinks --allow-unknown-type";

/// git's read-only subcommands.
pub const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "blame",
    "rev-parse",
    "ls-files",
    "describe",
    "shortlog",
    "grep",
    "reflog",
    "cat-file",
    "ls-tree",
    "merge-base",
    "rev-list",
    "show-ref",
    "for-each-ref",
    "name-rev",
    "diff-tree",
    "diff-files",
    "count-objects",
    "check-ignore",
    "check-attr",
    "whatchanged",
    "branch",
    "tag",
    "remote",
    "stash",
];
