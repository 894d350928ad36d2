"""Dataset card templates (`<family>.md`), installed as package data of `ragloaders.dataset_cards`."""
