# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_vcpustat_global_optspecs
    string join \n e/enable d/disable freq= status temporary n/numeric r/raw t cpus= sort= top= o/output= sysroot= record= replay= h/help V/version
end

function __fish_vcpustat_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_vcpustat_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_vcpustat_using_subcommand
    set -l cmd (__fish_vcpustat_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c vcpustat -n "__fish_vcpustat_needs_command" -l freq -d 'Drain the dispatch trace log N times per second (1 to the kernel\'s HZ; the kernel default is 50)' -r
complete -c vcpustat -n "__fish_vcpustat_needs_command" -l cpus -d 'Only these vCPUs, e.g. 0-7,16' -r
complete -c vcpustat -n "__fish_vcpustat_needs_command" -l sort -d 'Order of the vCPU rows (home: worst home ratio first)' -r -f -a "cpu\t'By CPU number'
home\t'Worst home-node hit ratio first'
total\t'Most dispatches first'
adj\t'Highest share on an adjacent node first'
far\t'Highest share on a far node first'"
complete -c vcpustat -n "__fish_vcpustat_needs_command" -l top -d 'Show only the first N vCPUs after sorting (sorts by home unless --sort)' -r
complete -c vcpustat -n "__fish_vcpustat_needs_command" -s o -l output -d 'Output format' -r -f -a "text\t'Aligned columns for people'
json\t'One JSON document, closed even when interrupted'
ndjson\t'One JSON object per sample and line'
csv\t'Comma-separated values with a header line'
prometheus\t'Prometheus text exposition format (0.0.4), one exposition per sample'"
complete -c vcpustat -n "__fish_vcpustat_needs_command" -l sysroot -d 'Read every kernel file under DIR instead of / (offline analysis, tests)' -r -F
complete -c vcpustat -n "__fish_vcpustat_needs_command" -l record -d 'Write every kernel input read, with the sample times, to FILE' -r -F
complete -c vcpustat -n "__fish_vcpustat_needs_command" -l replay -d 'Take the samples from a recording instead of the live system' -r -F
complete -c vcpustat -n "__fish_vcpustat_needs_command" -s e -l enable -d 'Switch the statistics on (this resets the counters). Stays on at exit unless --temporary'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -s d -l disable -d 'Switch the statistics off. Stays off at exit unless --temporary'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -l status -d 'Print whether the statistics are on and the current frequency'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -l temporary -d 'Undo --enable, --disable and --freq too when the run ends'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -s n -l numeric -d 'Show counts instead of percentages'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -s r -l raw -d 'Show cumulative counts since the statistics were enabled'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -s t -d 'Print the time of each report'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -s V -l version -d 'Print version'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -a "trace" -d 'Record the Dispatch Trace Log, or report dispatch latency and the physical-processor timeline from recordings'
complete -c vcpustat -n "__fish_vcpustat_needs_command" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and not __fish_seen_subcommand_from record report help" -s h -l help -d 'Print help'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and not __fish_seen_subcommand_from record report help" -f -a "record" -d 'Record the DTL of some vCPUs of this partition into a file'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and not __fish_seen_subcommand_from record report help" -f -a "report" -d 'Report dispatch latency and the physical-processor view of recordings'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and not __fish_seen_subcommand_from record report help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -l cpus -d 'vCPUs to record, e.g. 0-3,8 (default: every cpu-N of the DTL)' -r
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -l duration -d 'How long to record (2, 0.5, 250ms, 1m); default until interrupted' -r
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -l poll -d 'Time between two polls of each ring (85 records each)' -r
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -l events -d 'Events to log (sets dtl_event_mask while recording, then restores it; after a killed run, write the old value back, e.g. 0x07)' -r -f -a "cede\t'Voluntary (OS-initiated) virtual processor waits: H_CEDE'
preempt\t'Time-slice preempts'
fault\t'Virtual partition memory page faults'"
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -s w -l write -d 'The recording to write' -r -F
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -l sysroot -d 'Read every kernel file under DIR instead of / (offline analysis, tests)' -r -F
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -l record -d 'Write every kernel input read, with the sample times, to FILE' -r -F
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -l replay -d 'Take the samples from a recording instead of the live system' -r -F
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -l force -d 'Read the DTL even on kernels known to crash when it is read'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from record" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from report" -s o -l output -d 'Output format' -r -f -a "text\t'Titled, aligned tables'
json\t'One JSON document holding every section'
csv\t'Comma-separated values of one table (--table)'"
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from report" -l table -d 'Write only this table (required with -o csv: one table per file)' -r -f -a "latency\t'Per vCPU: dispatch latency, idle wait, migrations'
reasons\t'Per vCPU, kind and reason code: counts'
processors\t'Per physical processor: window, traced share, delays'
shares\t'Per processor and vCPU (and partition): dispatches and share'
timeline\t'Every physical record in start order (implies --timeline)'"
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from report" -l topology -d 'Chip and node of each physical processor ("0-7 chip=0 node=0" lines)' -r -F
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from report" -l timeline -d 'List every physical record (in start order) instead of the per-processor summary'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from report" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from help" -f -a "record" -d 'Record the DTL of some vCPUs of this partition into a file'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from help" -f -a "report" -d 'Report dispatch latency and the physical-processor view of recordings'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand trace; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand help; and not __fish_seen_subcommand_from trace help" -f -a "trace" -d 'Record the Dispatch Trace Log, or report dispatch latency and the physical-processor timeline from recordings'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand help; and not __fish_seen_subcommand_from trace help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand help; and __fish_seen_subcommand_from trace" -f -a "record" -d 'Record the DTL of some vCPUs of this partition into a file'
complete -c vcpustat -n "__fish_vcpustat_using_subcommand help; and __fish_seen_subcommand_from trace" -f -a "report" -d 'Report dispatch latency and the physical-processor view of recordings'
