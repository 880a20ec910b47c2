from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "django_project.shop"
    label = "shop"
