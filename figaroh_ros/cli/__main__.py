import sys

from figaroh_ros.cli.main import main

sys.exit(main())
