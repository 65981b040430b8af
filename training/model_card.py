"""Write (or rewrite) a model directory's README.md, its model card in the Hugging Face Hub's format, from the
directory's config.json, metrics.json and notes.md, so the directory can be uploaded to the Hub as it is.

    python -m training.model_card assets/model
    python -m training.model_card runs/cpu/model --repo-id user/transformer-en-it

The export of `training.train` and `training.evaluate --record` write it too; this is for a directory whose notes
or metrics were edited by hand. `--repo-id` names the Hub repository in the card's usage examples and metadata.
"""

import argparse

from transformer.model_card import write_model_card

from .cli import run_cli


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m training.model_card", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", help="model directory (config.json, metrics.json, optional notes.md)")
    parser.add_argument("--repo-id", help="the Hub repository the model is (to be) uploaded to, user/name")
    args = parser.parse_args(argv)
    print(write_model_card(args.model_dir, repo_id=args.repo_id))


if __name__ == "__main__":
    run_cli(main)
