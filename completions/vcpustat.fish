complete --keep-order --exclusive --command vcpustat --arguments "(COMPLETE=fish vcpustat -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
