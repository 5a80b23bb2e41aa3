complete --keep-order --exclusive --command iostat-rs --arguments "(COMPLETE=fish iostat-rs -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
