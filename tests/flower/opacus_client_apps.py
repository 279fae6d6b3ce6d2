"""Small Flower ClientApps for the Opacus check (never run: the check reads them)."""

import opacus
from flwr.app import Message
from flwr.client import NumPyClient
from flwr.clientapp import ClientApp

per_round = ClientApp()


@per_round.train()
def train_with_new_engine(msg: Message, context):
    engine = opacus.PrivacyEngine()  # a new engine (and accountant) every round: Flower's Opacus example
    return engine


def make_engine():
    return opacus.PrivacyEngine()


through_helper = ClientApp()


@through_helper.train()
def train_through_helper(msg: Message, context):
    return make_engine()


class OpacusClient(NumPyClient):
    def fit(self, parameters, config):
        from opacus import PrivacyEngine

        return PrivacyEngine()


def client_fn(context):
    return OpacusClient().to_client()


legacy = ClientApp(client_fn=client_fn)

plain = ClientApp()


@plain.train()
def train_without_engine(msg: Message, context):
    return msg
