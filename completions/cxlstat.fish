complete -c cxlstat -l list-events -d 'List the events of every CXL PMU (or of PMU), grouped by event group' -r
complete -c cxlstat -s e -l event -d 'Events to count: NAME, PMU/NAME/, PMU/term=value,.../, vid=..,gid=..,mask=.., {a,b} groups; comma lists and repeated -e' -r
complete -c cxlstat -l pmu -d 'Count unqualified events only on these PMUs (comma list or repeated)' -r
complete -c cxlstat -s p -l pid -d 'Refused: CXL PMUs cannot count per task' -r
complete -c cxlstat -s t -l tid -d 'Refused: CXL PMUs cannot count per thread' -r
complete -c cxlstat -s I -l interval-print -d 'Print counts every MS milliseconds, as perf stat -I' -r
complete -c cxlstat -l interval-count -d 'With -I: stop after COUNT reports' -r
complete -c cxlstat -s o -l output -d 'Output format (csv: the common CSV of all hwstat tools, with a header, a timestamp and an index; -x gives perf stat\'s layout instead)' -r -f -a "text\t'Aligned columns for people'
json\t'One JSON document, closed even when interrupted'
ndjson\t'One JSON object per sample and line'
csv\t'Comma-separated values with a header line'
prometheus\t'Prometheus text exposition format (0.0.4), one exposition per sample'"
complete -c cxlstat -s x -l field-separator -d 'perf stat -x output with this separator: per line COUNT,UNIT,EVENT,RUN_NS,RUNNING%,RATE,/sec (with intervals, the time first)' -r
complete -c cxlstat -l sysroot -d 'Read every kernel file under DIR instead of / (offline analysis, tests)' -r -F
complete -c cxlstat -l record -d 'Write every kernel input read, with the sample times, to FILE' -r -F
complete -c cxlstat -l replay -d 'Take the samples from a recording instead of the live system' -r -F
complete -c cxlstat -l list -d 'List the CXL PMUs: perf type, CPU, memory device, filters, events'
complete -c cxlstat -s a -l all-cpus -d 'System-wide counting (always the case for CXL PMUs; accepted for perf compatibility)'
complete -c cxlstat -l aggregate -d 'Sum each event over all PMUs instead of one row per PMU and event'
complete -c cxlstat -l dry-run -d 'Print each event\'s PMU, perf_event_attr fields and CPU without opening anything'
complete -c cxlstat -s h -l help -d 'Print help (see more with \'--help\')'
complete -c cxlstat -s V -l version -d 'Print version'
