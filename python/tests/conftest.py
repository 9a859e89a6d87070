import os
import sys

# Work from the source tree without PYTHONPATH, and let tests import models.
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
