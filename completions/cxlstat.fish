complete --keep-order --exclusive --command cxlstat --arguments "(COMPLETE=fish cxlstat -- (commandline --current-process --tokenize --cut-at-cursor) (commandline --current-token))"
