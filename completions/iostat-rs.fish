complete -c iostat-rs -s p -d 'Display devices and their partitions (all with ALL or no argument)' -r
complete -c iostat-rs -s f -d 'Read statistics from DIR (diskstats, block/, dev/block/); +f DIR: also' -r
complete -c iostat-rs -s j -d 'Display persistent device names of this type (implies --pretty)' -r
complete -c iostat-rs -s g -d 'Group the devices that follow and display their totals' -r
complete -c iostat-rs -s o -d 'Output format: sysstat\'s JSON, or (extensions) csv, ndjson, prometheus' -r
complete -c iostat-rs -l dec -d 'Number of decimal places' -r
complete -c iostat-rs -l sysroot -d 'Read every kernel file under DIR instead of /' -r
complete -c iostat-rs -l record -d 'Write every kernel input read, with the sample times, to FILE' -r
complete -c iostat-rs -l replay -d 'Take the samples from a recording' -r
complete -c iostat-rs -s c -d 'Display the CPU utilization report'
complete -c iostat-rs -s d -d 'Display the device utilization report'
complete -c iostat-rs -s H -d 'With -g, display only the group totals'
complete -c iostat-rs -s h -d 'Same as --human --pretty'
complete -c iostat-rs -s k -d 'Display statistics in kilobytes'
complete -c iostat-rs -s m -d 'Display statistics in megabytes'
complete -c iostat-rs -s G -d 'Display statistics in gigabytes'
complete -c iostat-rs -s N -d 'Display registered device-mapper names'
complete -c iostat-rs -s s -d 'Display a short (narrower) report'
complete -c iostat-rs -s t -d 'Print the time of each report'
complete -c iostat-rs -s U -d 'Print the time of each report in seconds since the epoch'
complete -c iostat-rs -s V -d 'Print the version and the environment, then exit'
complete -c iostat-rs -s x -d 'Display extended statistics'
complete -c iostat-rs -s y -d 'Omit the first report (statistics since boot)'
complete -c iostat-rs -s z -d 'Omit devices with no activity during the interval'
complete -c iostat-rs -l human -d 'Print sizes with units (k, M, G) and percentages with %'
complete -c iostat-rs -l pretty -d 'Put the device name at the end of the line'
complete -c iostat-rs -l compact -d 'Do not split the --pretty -x report'
complete -c iostat-rs -l help -d 'Print this help'
